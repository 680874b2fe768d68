// memory_space.hpp — where a case's buffers live: plain host memory (the
// reference's side) or a platform's memory on one device (through
// jw_platform_desc, for the platform under test or the device `jitwarm
// tune` runs on), behind one interface so both are placed alike
// (case_arguments.hpp).
//
// Must not: touch a device from the host except through the platform's
// copy.
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace jitwarm::device_args {

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

}  // namespace jitwarm::device_args
