// A libcuda.so.1 with no device: every entry point the CUDA plugin resolves
// (cuda_device_driver.hpp), each refusing with CUDA_ERROR_NO_DEVICE, and a
// count of cuInit calls. Found first through LD_LIBRARY_PATH by the plugin
// and by NVRTC alike, it shows on a machine without a GPU who initializes the
// driver, and when (test_driver_untouched_by_warmup.cpp).
#include <cuda.h>

#include <atomic>

namespace {
std::atomic<int> init_calls{0};
constexpr CUresult kNoDevice = CUDA_ERROR_NO_DEVICE;
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int fake_libcuda_init_calls(void) {
  return init_calls.load();
}

CUresult CUDAAPI cuInit(unsigned int) {
  ++init_calls;
  return kNoDevice;
}
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult, const char** name) {
  *name = "CUDA_ERROR_NO_DEVICE";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char** text) {
  *text = "no CUDA-capable device (fake libcuda of the jitwarm tests)";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int*) {
  return kNoDevice;
}
CUresult CUDAAPI cuDeviceGet(CUdevice*, int) {
  return kNoDevice;
}
CUresult CUDAAPI cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice) {
  return kNoDevice;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext*, CUdevice) {
  return kNoDevice;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  return kNoDevice;
}
CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice, unsigned int*, int*) {
  return kNoDevice;
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext) {
  return kNoDevice;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext*) {
  return kNoDevice;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext*) {
  return kNoDevice;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice*) {
  return kNoDevice;
}
CUresult CUDAAPI cuCtxSynchronize(void) {
  return kNoDevice;
}
CUresult CUDAAPI cuCtxGetId(CUcontext, unsigned long long*) {
  return kNoDevice;
}
CUresult CUDAAPI cuStreamGetCtx(CUstream, CUcontext*) {
  return kNoDevice;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) {
  return kNoDevice;
}
CUresult CUDAAPI cuStreamCreate(CUstream*, unsigned int) {
  return kNoDevice;
}
CUresult CUDAAPI cuStreamDestroy(CUstream) {
  return kNoDevice;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule*, const void*) {
  return kNoDevice;
}
CUresult CUDAAPI cuModuleUnload(CUmodule) {
  return kNoDevice;
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction*, CUmodule, const char*) {
  return kNoDevice;
}
CUresult CUDAAPI cuFuncGetAttribute(int*, CUfunction_attribute, CUfunction) {
  return kNoDevice;
}
CUresult CUDAAPI cuLaunchKernel(CUfunction, unsigned int, unsigned int,
                                unsigned int, unsigned int, unsigned int,
                                unsigned int, unsigned int, CUstream, void**,
                                void**) {
  return kNoDevice;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr*, size_t) {
  return kNoDevice;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr) {
  return kNoDevice;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr, const void*, size_t, CUstream) {
  return kNoDevice;
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void*, CUdeviceptr, size_t, CUstream) {
  return kNoDevice;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr, CUdeviceptr, size_t, CUstream) {
  return kNoDevice;
}

}  // extern "C"
