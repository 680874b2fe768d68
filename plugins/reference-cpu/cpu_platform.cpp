// cpu_platform.cpp — the "cpu" platform's callbacks (see cpu_platform.hpp).
// Each goes through plugin::guarded, so no exception crosses the C ABI.
#include "cpu_platform.hpp"

#include <jitwarm/plugin.hpp>

#include <cstdlib>
#include <cstring>
#include <limits>

#include "param_reader.hpp"
#include "reference_cpu.hpp"

namespace jitwarm::reference_cpu {
namespace {

using plugin::guarded;
using plugin::PluginError;

void check_device(int32_t device) {
  if (device != 0 && device != -1) {
    throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                      concat("cpu platform: device ", device,
                             " does not exist (the host is device 0)"));
  }
}

jw_status capabilities(void*, uint32_t* out_flags, const jw_text_sink* detail) {
  return guarded([&] {
    if (out_flags == nullptr) {
      throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                        "cpu platform: capabilities: out_flags is null");
    }
    *out_flags = JW_PLATFORM_CAN_COMPILE | JW_PLATFORM_CAN_LAUNCH;
    plugin::append(detail,
                   "host memory; kernels run synchronously on the calling "
                   "thread");
  });
}

jw_status device_count(void*, int32_t* out_count) {
  return guarded([&] {
    if (out_count == nullptr) {
      throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                        "cpu platform: device_count: out_count is null");
    }
    *out_count = 1;
  });
}

jw_status device_target(void*, int32_t device, const jw_text_sink* out) {
  return guarded([&] {
    check_device(device);
    plugin::append(out, host_target());
  });
}

jw_status allocate(void*, int32_t device, size_t bytes, void** out_ptr) {
  return guarded([&] {
    check_device(device);
    if (out_ptr == nullptr) {
      throw PluginError(JW_ERROR_INVALID_ARGUMENT,
                        "cpu platform: allocate: out_ptr is null");
    }
    *out_ptr = nullptr;
    // aligned_alloc wants a multiple of the alignment; a zero-byte request
    // still gets one line, so allocate(0) is a real, unique pointer.
    if (bytes > std::numeric_limits<size_t>::max() - kAllocationAlignment) {
      throw PluginError(
          JW_ERROR_OUT_OF_MEMORY,
          concat("cpu platform: cannot allocate ", bytes, " bytes"));
    }
    const size_t rounded = bytes == 0 ? kAllocationAlignment
                                      : (bytes + kAllocationAlignment - 1) /
                                            kAllocationAlignment *
                                            kAllocationAlignment;
    void* memory = std::aligned_alloc(kAllocationAlignment, rounded);
    if (memory == nullptr) {
      throw PluginError(
          JW_ERROR_OUT_OF_MEMORY,
          concat("cpu platform: cannot allocate ", bytes, " bytes"));
    }
    *out_ptr = memory;
  });
}

jw_status free_memory(void*, int32_t device, void* ptr) {
  return guarded([&] {
    check_device(device);
    std::free(ptr);
  });
}

jw_status copy(void*, int32_t device, void* dst, const void* src, size_t bytes,
               jw_copy_direction direction, void*) {
  return guarded([&] {
    check_device(device);
    // A C host may pass any value; read it as an integer before trusting.
    const int64_t raw_direction = enum_value(direction);
    if (raw_direction != JW_COPY_HOST_TO_DEVICE &&
        raw_direction != JW_COPY_DEVICE_TO_HOST &&
        raw_direction != JW_COPY_DEVICE_TO_DEVICE) {
      throw PluginError(
          JW_ERROR_INVALID_ARGUMENT,
          concat("cpu platform: copy: unknown direction ", raw_direction));
    }
    if (bytes == 0) return;
    if (dst == nullptr || src == nullptr) {
      throw PluginError(
          JW_ERROR_INVALID_ARGUMENT,
          concat("cpu platform: copy of ", bytes, " bytes with a null ",
                 dst == nullptr ? "destination" : "source"));
    }
    // Every direction is host to host; memmove also tolerates overlap.
    std::memmove(dst, src, bytes);
  });
}

jw_status synchronize(void*, int32_t device, void*) {
  return guarded([&] { check_device(device); });
}

}  // namespace

jw_platform_desc cpu_platform_desc() {
  jw_platform_desc desc{};
  desc.struct_size = sizeof(jw_platform_desc);
  desc.next = nullptr;
  desc.name = "cpu";
  desc.user_data = nullptr;
  desc.capabilities = &capabilities;
  desc.device_count = &device_count;
  desc.device_target = &device_target;
  desc.allocate = &allocate;
  desc.free_memory = &free_memory;
  desc.copy = &copy;
  desc.synchronize = &synchronize;
  return desc;
}

}  // namespace jitwarm::reference_cpu
