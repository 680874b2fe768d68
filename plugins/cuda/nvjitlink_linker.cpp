// NvJitLinker: one nvJitLink handle per link, destroyed on every path.
#include "nvjitlink_linker.hpp"

#include "rtc_compiler.hpp"
#include "vendor_library.hpp"

#include <jitwarm/plugin.hpp>

namespace jitwarm::cuda {
namespace {

// Destroys the handle when the link leaves, successful or not.
class LinkHandle {
 public:
  explicit LinkHandle(const NvJitLinkApi& api) : api_(api) {}
  ~LinkHandle() {
    if (handle_ != nullptr) api_.destroy(&handle_);
  }
  LinkHandle(const LinkHandle&) = delete;
  LinkHandle& operator=(const LinkHandle&) = delete;
  nvJitLinkHandle* out() { return &handle_; }
  nvJitLinkHandle get() const { return handle_; }

 private:
  const NvJitLinkApi& api_;
  nvJitLinkHandle handle_ = nullptr;
};

}  // namespace

NvJitLinkApi::NvJitLinkApi(const gpu::DynamicLibrary& library)
    : version(library, "nvJitLinkVersion"),
      create(library, "__nvJitLinkCreate_13_0"),
      destroy(library, "__nvJitLinkDestroy_13_0"),
      add_data(library, "__nvJitLinkAddData_13_0"),
      complete(library, "__nvJitLinkComplete_13_0"),
      linked_cubin_size(library, "__nvJitLinkGetLinkedCubinSize_13_0"),
      linked_cubin(library, "__nvJitLinkGetLinkedCubin_13_0"),
      error_log_size(library, "__nvJitLinkGetErrorLogSize_13_0"),
      error_log(library, "__nvJitLinkGetErrorLog_13_0") {}

std::vector<std::string> NvJitLinkApi::missing() const {
  return gpu::unresolved(version, create, destroy, add_data, complete,
                         linked_cubin_size, linked_cubin, error_log_size,
                         error_log);
}

std::unique_ptr<NvJitLinker> NvJitLinker::open(int nvrtc_major, int nvrtc_minor,
                                               std::string& why_not) {
  const gpu::VendorLibrarySearch search{
      "nvJitLink", "JITWARM_NVJITLINK_LIBRARY", {"libnvJitLink.so.13"}};
  gpu::DynamicLibrary library =
      gpu::open_vendor_library<NvJitLinkApi>(search, why_not);
  if (!library.is_open()) return nullptr;
  std::unique_ptr<NvJitLinker> linker(new NvJitLinker(std::move(library)));
  // nvJitLink reads LTO IR of its own version and older ones.
  const bool reads_nvrtc = static_cast<int>(linker->major_) > nvrtc_major ||
                           (static_cast<int>(linker->major_) == nvrtc_major &&
                            static_cast<int>(linker->minor_) >= nvrtc_minor);
  if (!reads_nvrtc) {
    why_not = linker->identity() + " is older than nvrtc " +
              std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor);
    return nullptr;
  }
  return linker;
}

NvJitLinker::NvJitLinker(gpu::DynamicLibrary library)
    : library_(std::move(library)), api_(library_) {
  if (api_.version(&major_, &minor_) != NVJITLINK_SUCCESS) {
    throw plugin::PluginError(JW_ERROR_INTERNAL, "nvJitLinkVersion failed");
  }
}

std::string NvJitLinker::identity() const {
  return "nvjitlink " + std::to_string(major_) + "." + std::to_string(minor_);
}

std::string NvJitLinker::link(std::string_view ltoir, const std::string& kernel,
                              const std::string& arch) const {
  // -no-cache: nvJitLink's cache, like NVRTC's, is the CUDA driver's
  // compute cache, and each link would initialize the driver to reach it
  // (nvrtc_compiler.cpp says what that breaks; test_cuda_driver_untouched
  // counts the cuInit calls).
  const std::string arch_option = "-arch=" + arch;
  const std::string kernel_option = "-kernels-used=" + kernel;
  const char* options[] = {arch_option.c_str(), "-lto", "-no-cache",
                           kernel_option.c_str()};
  LinkHandle handle(api_);
  const auto failed = [&](nvJitLinkResult result, const char* call) {
    std::string log;
    std::size_t size = 0;
    if (handle.get() != nullptr &&
        api_.error_log_size(handle.get(), &size) == NVJITLINK_SUCCESS &&
        size > 1) {
      log.resize(size);
      if (api_.error_log(handle.get(), log.data()) == NVJITLINK_SUCCESS) {
        log.resize(size - 1);  // the terminating NUL
      } else {
        log.clear();
      }
    }
    return gpu::RtcCompileError(std::string(call) + " failed (nvJitLink " +
                                    std::to_string(result) + ") for " + kernel,
                                std::move(log));
  };
  nvJitLinkResult result =
      api_.create(handle.out(), std::size(options), options);
  if (result != NVJITLINK_SUCCESS) throw failed(result, "nvJitLinkCreate");
  result = api_.add_data(handle.get(), NVJITLINK_INPUT_LTOIR, ltoir.data(),
                         ltoir.size(), "batch");
  if (result != NVJITLINK_SUCCESS) throw failed(result, "nvJitLinkAddData");
  result = api_.complete(handle.get());
  if (result != NVJITLINK_SUCCESS) throw failed(result, "nvJitLinkComplete");
  std::size_t size = 0;
  result = api_.linked_cubin_size(handle.get(), &size);
  if (result != NVJITLINK_SUCCESS) {
    throw failed(result, "nvJitLinkGetLinkedCubinSize");
  }
  std::string cubin(size, '\0');
  result = api_.linked_cubin(handle.get(), cubin.data());
  if (result != NVJITLINK_SUCCESS) {
    throw failed(result, "nvJitLinkGetLinkedCubin");
  }
  return cubin;
}

}  // namespace jitwarm::cuda
