// Platforms: what plugins registered through register_platform (device
// discovery, targets, memory services), and which one launches go to when a
// caller names none.
//
// Contract:
//  * Platforms are only ever added (at plugin load), never removed while
//    the runtime lives. Each addition publishes a new immutable snapshot;
//    readers (find, the launch path) take one acquire load and no lock.
//  * A record's per-device targets are asked of the plugin once and then
//    read with one acquire load.
//  * The default platform is chosen once, on first use after a change: the
//    first of cuda, hip, cpu (then any other) that can launch on a device.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "counted_mutex.hpp"

namespace jitwarm::detail {

struct PlatformRecord {
  static constexpr int kMaxDevices = 64;
  jw_platform_desc c{};
  std::string name;
  std::string origin;
  std::shared_ptr<void> keep_alive;  // the plugin library

  // What the platform can do and why not, without its device count: asks
  // no driver for devices, so none is initialized and the process may still
  // fork (docs/plugin-abi.md "Platforms"). device_count stays 0.
  PlatformInfo capabilities() const;
  // capabilities() and the device count, which initializes the driver.
  PlatformInfo info() const;
  // "cuda:sm_90" for a device; throws for a bad index or a plugin error.
  const std::string& target(int32_t device);
  // The device's kind, which tuning results are kept per: its model name
  // (jw_platform_desc.device_name), or its target where the platform names
  // none. Asked once per device, like the target.
  const std::string& device_kind(int32_t device);

 private:
  // A per-device text asked of the plugin once (`ask` fills it).
  const std::string& remembered(
      std::array<std::atomic<const std::string*>, kMaxDevices>& slots,
      int32_t device, const std::function<std::string()>& ask);

  std::array<std::atomic<const std::string*>, kMaxDevices> targets_{};
  std::array<std::atomic<const std::string*>, kMaxDevices> kinds_{};
  CountedMutex target_mutex_;  // only for filling `targets_`
  std::vector<std::unique_ptr<std::string>> target_storage_;
};

class Platforms {
 public:
  Platforms();
  ~Platforms();
  Platforms(const Platforms&) = delete;
  Platforms& operator=(const Platforms&) = delete;

  void add(const std::vector<std::shared_ptr<PlatformRecord>>& records);
  // Lock-free; nullptr for an unknown name.
  PlatformRecord* find(std::string_view name) const;
  std::vector<std::shared_ptr<PlatformRecord>> all() const;
  // Throws JW_ERROR_NO_DEVICE naming the loaded platforms when none can
  // launch.
  std::string_view default_platform();
  // Why default_platform() is cpu, the CPU reference, although a platform
  // that compiles for a GPU is loaded ("cuda has no device here"), or ""
  // when it is not so.
  std::string cpu_fallback_reason();
  // Throws JW_ERROR_NOT_FOUND for an unknown platform.
  const std::string& target_for(std::string_view platform, int32_t device);
  // PlatformRecord::device_kind; throws as target_for does.
  const std::string& device_kind(std::string_view platform, int32_t device);

 private:
  using Snapshot = std::vector<std::shared_ptr<PlatformRecord>>;
  CountedMutex mutex_;  // writers, and choosing the default
  std::atomic<const Snapshot*> current_;
  // Every snapshot ever published: a reader may still hold an old one, and
  // there are as many as plugin loads that registered a platform.
  std::vector<std::unique_ptr<const Snapshot>> snapshots_;
  std::atomic<const std::string*> default_{nullptr};
  std::vector<std::unique_ptr<std::string>> default_storage_;
};

}  // namespace jitwarm::detail
