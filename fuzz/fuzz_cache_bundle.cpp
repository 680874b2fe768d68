// Fuzz target: the bundle reader (detail::read_bundle), which reads files
// an operator is handed, then the signature check an import makes against
// the one key the seeds are signed with (fuzz_key.hpp). Each input is
// written to a file and read as `jitwarm cache import` reads it: a bad
// bundle must be a clear error (never an internal one, a crash or a hang).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "cache_bundle.hpp"
#include "fuzz_check.hpp"
#include "fuzz_key.hpp"

using namespace jitwarm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("jitwarm-fuzz-bundle-" + std::to_string(getpid()) + ".jwb");
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data),
             static_cast<std::streamsize>(size));
  static const detail::EntryTrust trust(std::nullopt,
                                        {fuzz::fuzz_signing_key().public_key});
  try {
    detail::BundleSignature signature;
    const std::vector<detail::BundleItem> items =
        detail::read_bundle(file, &signature);
    const std::optional<std::string> refused =
        detail::bundle_signature_refusal(signature, trust);
    if (refused && refused->empty())
      fuzz::finding("bundle refused without a reason");
    for (const detail::BundleItem& item : items) {
      std::string why;
      if (!detail::identify_entry(item.bytes, &why))
        fuzz::finding("read_bundle returned an entry that does not identify");
    }
  } catch (const Error& e) {
    fuzz::expect_clear_error(e);
  }
  return 0;
}
