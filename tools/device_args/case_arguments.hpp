// case_arguments.hpp — a case's kernel arguments: its buffers placed in a
// memory space with the arguments that point at them (PlacedCase), or
// storage-free (metadata_args) for compile-only work.
//
// Owns the two-phase build the pointer-array kernels need: every buffer is
// allocated first, then the address slots are filled with addresses of the
// memory space the case runs in, then the initial contents are uploaded.
// Also owns the 16-byte alignment rule: an aligned buffer starts at the
// allocation (which must be 16-byte aligned: checked), a misaligned one one
// element further. Host memory and a platform's memory behave the same
// (memory_space.hpp).
//
// Must not: allocate on a device in compile-only mode (metadata_args builds
// storage-free arguments for that).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "case_model.hpp"
#include "memory_space.hpp"

namespace jitwarm::device_args {

// A case placed in one memory space; frees everything on destruction.
class PlacedCase {
 public:
  PlacedCase(const Case& the_case, MemorySpace& memory);
  ~PlacedCase();
  PlacedCase(const PlacedCase&) = delete;
  PlacedCase& operator=(const PlacedCase&) = delete;

  // Arguments in schema order; valid while this object lives.
  std::span<const jw_arg_value> args() const { return args_; }
  // The current contents of a buffer's storage (downloaded).
  std::vector<unsigned char> read(std::size_t buffer) const;
  // Uploads a buffer's initial contents again (addresses included).
  void reset(std::size_t buffer);

 private:
  std::vector<unsigned char> initial_image(std::size_t buffer) const;

  const Case& case_;
  MemorySpace& memory_;
  std::vector<void*> bases_;                         // what allocate returned
  std::vector<unsigned char*> data_;                 // where each buffer starts
  std::vector<std::unique_ptr<jw_tensor>> tensors_;  // stable addresses
  std::vector<jw_arg_value> args_;
};

// Storage-free arguments for the same case (warmup tensors: metadata and
// the alignment the placed tensor would have), for compile-only mode.
struct MetadataArgs {
  std::vector<std::unique_ptr<jw_tensor_meta>> metas;
  std::vector<jw_arg_value> args;
};
MetadataArgs metadata_args(const Case& the_case);

}  // namespace jitwarm::device_args
