// GpuBackend: its parts put together, and the platform's capabilities.
#include "gpu_backend.hpp"

#include <utility>

namespace jitwarm::gpu {

GpuBackend::GpuBackend(GpuBackendDescription description,
                       std::unique_ptr<RtcCompiler> compiler,
                       std::string compiler_unavailable,
                       std::unique_ptr<DeviceDriver> driver,
                       std::span<const EmbeddedSource> sources)
    : description_(std::move(description)),
      compiler_(description_, std::move(compiler),
                std::move(compiler_unavailable), sources),
      launcher_(description_, compiler_, std::move(driver)) {}

GpuBackend::~GpuBackend() = default;

uint32_t GpuBackend::capabilities(std::string& detail) const {
  uint32_t flags = 0;
  detail.clear();
  if (const RtcCompiler* rtc = compiler_.rtc(); rtc != nullptr) {
    flags |= JW_PLATFORM_CAN_COMPILE;
    detail += rtc->libraries();
  } else {
    detail += compiler_.unavailable();
  }
  const DriverStatus status = driver().status();
  if (status.can_launch) flags |= JW_PLATFORM_CAN_LAUNCH;
  if (!status.detail.empty()) {
    if (!detail.empty()) detail += "; ";
    detail += status.detail;
  }
  return flags;
}

void GpuBackend::shutdown() {
  launcher_.release_all();
}

}  // namespace jitwarm::gpu
