// A libcuda.so.1 whose every call succeeds and whose launches do nothing,
// with one "device" (an sm_90 with an H100/H200's limits) and host memory
// for device memory. Only for counting the host instructions of a launch on
// a machine without a GPU (bench/launch_instructions.py): put its directory
// first on LD_LIBRARY_PATH. Nothing it returns is checked for truth.
#include <cuda.h>

#include "h200_attributes.hpp"

#include <cstdlib>
#include <cstring>

namespace {
int context_storage, stream_storage, module_storage, function_storage;
CUcontext current = nullptr;
}  // namespace

extern "C" {
CUresult cuInit(unsigned) {
  return CUDA_SUCCESS;
}
CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult, const char** name) {
  *name = "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char** text) {
  *text = "(the null libcuda of the jitwarm benches)";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                              CUdevice) {
  *value = jitwarm::fake_driver::h200_attribute(attribute);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice) {
  *context = reinterpret_cast<CUcontext>(&context_storage);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxGetState(CUdevice, unsigned* flags, int* active) {
  *flags = 0;
  *active = 1;
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext context) {
  current = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* context) {
  if (context != nullptr) *context = current;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext* context) {
  *context = current;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetId(CUcontext, unsigned long long* id) {
  *id = 1;
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize() {
  return CUDA_SUCCESS;
}
CUresult cuStreamGetCtx(CUstream, CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(&context_storage);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) {
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream* stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(&stream_storage);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) {
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule* module, const void*) {
  *module = reinterpret_cast<CUmodule>(&module_storage);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) {
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule, const char*) {
  *function = reinterpret_cast<CUfunction>(&function_storage);
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int* value, CUfunction_attribute, CUfunction) {
  *value = 1024;
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, CUstream, void**,
                        void**) {
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  *pointer = reinterpret_cast<CUdeviceptr>(
      std::aligned_alloc(256, (bytes + 255) / 256 * 256));
  return *pointer != 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void*>(pointer));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes,
                           CUstream) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                           CUstream) {
  std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src),
              bytes);
  return CUDA_SUCCESS;
}
}
