// An artifact: what a compile makes of a key, which every cache tier keeps
// (the memory cache as it is, the persistent tiers as an entry,
// cache_entry.hpp). Its own header so that the entry format and the tiers'
// interface (cache_tier.hpp) need it without the memory cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace jitwarm::detail {

struct Artifact {
  std::string binary;
  std::string format;
  std::string entry_point;
  uint64_t id = 0;  // unique within the process
  // What the launch path needs beside the bytes (the key as the owning
  // implementation sees it), built once by Compiler::finalize.
  std::shared_ptr<const void> attachment;
};

}  // namespace jitwarm::detail
