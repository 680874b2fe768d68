// memory_space.cpp — host memory and a platform's memory (see
// memory_space.hpp).
#include "memory_space.hpp"

#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace jitwarm::device_args {
namespace {

class HostMemory final : public MemorySpace {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* memory = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (memory == nullptr) {
      throw std::bad_alloc();
    }
    return memory;
  }
  void release(void* base) noexcept override { std::free(base); }
  void upload(void* destination, const void* source,
              std::size_t bytes) override {
    if (bytes != 0) std::memcpy(destination, source, bytes);
  }
  void download(void* destination, const void* source,
                std::size_t bytes) override {
    if (bytes != 0) std::memcpy(destination, source, bytes);
  }
  void synchronize() override {}
  int32_t device_index() const override { return -1; }
  std::string describe() const override { return "host memory"; }
};

class PlatformMemory final : public MemorySpace {
 public:
  PlatformMemory(const jw_platform_desc& platform, int32_t device)
      : platform_(platform), device_(device) {
    if (platform.allocate == nullptr || platform.free_memory == nullptr ||
        platform.copy == nullptr || platform.synchronize == nullptr) {
      throw DeviceError(fmt::format(
          "platform {} has no memory services (allocate, free_memory, copy, "
          "synchronize): the runner cannot place inputs on it",
          platform.name));
    }
  }
  void* allocate(std::size_t bytes) override {
    void* pointer = nullptr;
    check(platform_.allocate(platform_.user_data, device_, bytes, &pointer),
          fmt::format("allocate({} bytes)", bytes));
    if (pointer == nullptr && bytes != 0) {
      throw DeviceError(fmt::format("platform {}: allocate({} bytes) gave null",
                                    platform_.name, bytes));
    }
    return pointer;
  }
  void release(void* base) noexcept override {
    if (base != nullptr)
      platform_.free_memory(platform_.user_data, device_, base);
  }
  void upload(void* destination, const void* source,
              std::size_t bytes) override {
    copy(destination, source, bytes, JW_COPY_HOST_TO_DEVICE, "host to device");
  }
  void download(void* destination, const void* source,
                std::size_t bytes) override {
    copy(destination, source, bytes, JW_COPY_DEVICE_TO_HOST, "device to host");
  }
  void synchronize() override {
    check(platform_.synchronize(platform_.user_data, device_, nullptr),
          "synchronize");
  }
  int32_t device_index() const override { return device_; }
  std::string describe() const override {
    return fmt::format("{} device {}", platform_.name, device_);
  }

 private:
  void copy(void* destination, const void* source, std::size_t bytes,
            jw_copy_direction direction, std::string_view words) {
    if (bytes == 0) return;
    check(platform_.copy(platform_.user_data, device_, destination, source,
                         bytes, direction, nullptr),
          fmt::format("copy of {} bytes {}", bytes, words));
  }
  void check(jw_status status, const std::string& what) const {
    if (status == JW_OK) return;
    throw DeviceError(fmt::format("platform {} device {}: {} failed: {} ({})",
                                  platform_.name, device_, what,
                                  jw_status_name(status), jw_last_error()));
  }

  const jw_platform_desc& platform_;
  int32_t device_;
};

}  // namespace

std::unique_ptr<MemorySpace> host_memory() {
  return std::make_unique<HostMemory>();
}

std::unique_ptr<MemorySpace> platform_memory(const jw_platform_desc& platform,
                                             int32_t device) {
  return std::make_unique<PlatformMemory>(platform, device);
}

}  // namespace jitwarm::device_args
