// The signing key of the fuzz seeds (make_corpus.cpp) and the one key the
// harnesses trust, so that signed seeds reach signature verification and
// mutations of them reach every refusal (unsigned, unknown signer,
// tampered).
#pragma once

#include <string>

#include "signing.hpp"

namespace jitwarm::fuzz {

inline const detail::SigningKey& fuzz_signing_key() {
  static const detail::SigningKey key =
      detail::signing_key_from_seed(std::string(32, 'j'));
  return key;
}

}  // namespace jitwarm::fuzz
