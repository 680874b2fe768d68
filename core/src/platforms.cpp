#include "platforms.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "errors.hpp"

namespace jitwarm::detail {

PlatformInfo PlatformRecord::capabilities() const {
  PlatformInfo info;
  info.name = name;
  info.origin = origin;
  uint32_t flags = 0;
  TextCollector detail;
  const jw_text_sink sink = detail.sink();
  if (c.capabilities(c.user_data, &flags, &sink) == JW_OK) {
    info.can_compile = (flags & JW_PLATFORM_CAN_COMPILE) != 0;
    info.can_launch = (flags & JW_PLATFORM_CAN_LAUNCH) != 0;
  }
  info.detail = detail.text;
  return info;
}

PlatformInfo PlatformRecord::info() const {
  PlatformInfo info = capabilities();
  int32_t count = 0;
  if (info.can_launch && c.device_count(c.user_data, &count) == JW_OK)
    info.device_count = count;
  return info;
}

const std::string& PlatformRecord::remembered(
    std::array<std::atomic<const std::string*>, kMaxDevices>& slots,
    int32_t device, const std::function<std::string()>& ask) {
  if (device < 0 || device >= kMaxDevices) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "platform {}: device index {} is out of range", name, device);
  }
  if (const std::string* t = slots[device].load(std::memory_order_acquire))
    return *t;
  std::lock_guard lock(target_mutex_);
  if (const std::string* t = slots[device].load(std::memory_order_acquire))
    return *t;
  target_storage_.push_back(std::make_unique<std::string>(ask()));
  slots[device].store(target_storage_.back().get(), std::memory_order_release);
  return *target_storage_.back();
}

const std::string& PlatformRecord::target(int32_t device) {
  return remembered(targets_, device, [&] {
    TextCollector text;
    const jw_text_sink sink = text.sink();
    check_plugin_status(
        c.device_target(c.user_data, device, &sink),
        fmt::format("platform {}: target of device {}", name, device));
    if (text.text.rfind(name + ":", 0) != 0) {
      fail(JW_ERROR_INTERNAL,
           "platform {} reported target '{}' for device {}; expected "
           "'{}:...'",
           name, text.text, device, name);
    }
    return std::move(text.text);
  });
}

const std::string& PlatformRecord::device_kind(int32_t device) {
  const std::string& device_target = target(device);  // checks the index
  return remembered(kinds_, device, [&] {
    if (c.device_name == nullptr) return device_target;
    TextCollector text;
    const jw_text_sink sink = text.sink();
    check_plugin_status(
        c.device_name(c.user_data, device, &sink),
        fmt::format("platform {}: name of device {}", name, device));
    return text.text.empty() ? device_target : std::move(text.text);
  });
}

Platforms::Platforms() {
  snapshots_.push_back(std::make_unique<const Snapshot>());
  current_.store(snapshots_.back().get(), std::memory_order_release);
}

Platforms::~Platforms() = default;

void Platforms::add(
    const std::vector<std::shared_ptr<PlatformRecord>>& records) {
  if (records.empty()) return;
  std::lock_guard lock(mutex_);
  auto next = std::make_unique<Snapshot>(*current_.load());
  next->insert(next->end(), records.begin(), records.end());
  snapshots_.push_back(std::move(next));
  current_.store(snapshots_.back().get(), std::memory_order_release);
  default_.store(nullptr, std::memory_order_release);  // choose again
}

PlatformRecord* Platforms::find(std::string_view name) const {
  for (const auto& p : *current_.load(std::memory_order_acquire)) {
    if (p->name == name) return p.get();
  }
  return nullptr;
}

std::vector<std::shared_ptr<PlatformRecord>> Platforms::all() const {
  return *current_.load(std::memory_order_acquire);
}

std::string_view Platforms::default_platform() {
  if (const std::string* p = default_.load(std::memory_order_acquire))
    return *p;
  const Snapshot& records = *current_.load(std::memory_order_acquire);
  std::vector<std::string> order = {"cuda", "hip", "cpu"};
  for (const auto& r : records) {
    if (std::find(order.begin(), order.end(), r->name) == order.end())
      order.push_back(r->name);
  }
  for (const auto& name : order) {
    for (const auto& r : records) {
      if (r->name != name) continue;
      const PlatformInfo info = r->info();
      if (info.can_launch && info.device_count > 0) {
        std::lock_guard lock(mutex_);
        default_storage_.push_back(std::make_unique<std::string>(name));
        default_.store(default_storage_.back().get(),
                       std::memory_order_release);
        return *default_storage_.back();
      }
    }
  }
  std::string names;
  for (const auto& r : records) names += (names.empty() ? "" : ", ") + r->name;
  fail(JW_ERROR_NO_DEVICE, "no loaded platform can launch (platforms: {})",
       names.empty() ? std::string("none; load plugins first") : names);
}

std::string Platforms::cpu_fallback_reason() {
  if (default_platform() != "cpu") return "";
  // Named only: their details (libraries found, the driver missing) are
  // the load report's.
  std::vector<std::string> idle;
  for (const auto& r : *current_.load(std::memory_order_acquire)) {
    if (r->name != "cpu" && r->info().can_compile) idle.push_back(r->name);
  }
  if (idle.empty()) return "";
  return fmt::format("{} {} no device here", fmt::join(idle, " and "),
                     idle.size() == 1 ? "has" : "have");
}

const std::string& Platforms::target_for(std::string_view platform,
                                         int32_t device) {
  PlatformRecord* record = find(platform);
  if (record == nullptr)
    fail(JW_ERROR_NOT_FOUND, "unknown platform '{}'", platform);
  return record->target(device);
}

const std::string& Platforms::device_kind(std::string_view platform,
                                          int32_t device) {
  PlatformRecord* record = find(platform);
  if (record == nullptr)
    fail(JW_ERROR_NOT_FOUND, "unknown platform '{}'", platform);
  return record->device_kind(device);
}

}  // namespace jitwarm::detail
