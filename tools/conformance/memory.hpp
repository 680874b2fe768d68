// memory.hpp — placing a case's buffers in a memory space and building the
// kernel arguments that point at them.
//
// Owns the two-phase build the pointer-array kernels need: every buffer is
// allocated first, then the address slots are filled with addresses of the
// memory space the case runs in, then the initial contents are uploaded.
// Also owns the 16-byte alignment rule: an aligned buffer starts at the
// allocation (which must be 16-byte aligned: checked), a misaligned one one
// element further. Host memory (for the reference) and a platform's memory
// (through jw_platform_desc, for the platform under test) behave the same.
//
// Must not: touch a device from the host except through the platform's
// copy; allocate on a device in compile-only mode (metadata_args builds
// storage-free arguments for that).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "case_model.hpp"

namespace jitwarm::conformance {

// Where buffers live.
class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* base) noexcept = 0;
  virtual void upload(void* destination, const void* source,
                      std::size_t bytes) = 0;
  virtual void download(void* destination, const void* source,
                        std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // jw_tensor::device_index for tensors in this space.
  virtual int32_t device_index() const = 0;
  virtual std::string describe() const = 0;
};

// Plain host memory, 64-byte aligned (the reference's side).
std::unique_ptr<MemorySpace> host_memory();

// A platform's memory services on one device. Failures throw DeviceError.
std::unique_ptr<MemorySpace> platform_memory(const jw_platform_desc& platform,
                                             int32_t device);

// Thrown when the platform's memory services fail: after one, the device
// context may be unusable, so a worker is replaced.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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

}  // namespace jitwarm::conformance
