// A libcuda.so.1 that models, without a GPU, what the CUDA plugin's choice
// of a launch's context depends on, and counts every call: put first on
// LD_LIBRARY_PATH, it is the driver of tests/gpu/test_cuda_launch_contexts.
// Nothing executes; what a launch would have run in is recorded instead.
//
// The model, kept small and deterministic:
// - Two devices with an sm_90's attributes (bench/null_driver's).
//   Every call but cuInit, cuDriverGetVersion and the error texts answers
//   CUDA_ERROR_NOT_INITIALIZED before cuInit.
// - A context has a device and a process-unique id (cuCtxGetId) that no
//   later context gets. Handles are slots of a fixed pool, and a created
//   context takes the slot of the last destroyed one: a new context has the
//   handle of a dead one, as the real driver's sometimes has.
// - One primary context per device, made on its first retain with a new
//   id; released to no reference it is inactive (its streams and modules go
//   with it) until retained again, with another id.
// - Each thread has a stack of current contexts (push, pop, set, get).
// - A stream, a module and its functions belong to the context that was
//   current when they were made, and die with it (a dead one is an invalid
//   handle). The special streams (NULL, CU_STREAM_LEGACY,
//   CU_STREAM_PER_THREAD) stand for the current context.
// - cuLaunchKernel runs in the stream's context; a function of another or
//   of a dead context is refused with CUDA_ERROR_INVALID_HANDLE and counted
//   as refused. A launch that runs is counted (in all and per context id)
//   and its context id and stream kept.
// - Device memory is host memory (aligned to 256 bytes); copies are memcpy.
//
// The counters are read through dlsym (model_libcuda_*, below); the entry
// points are counted by their cuda.h names without the ABI suffix.
#include <cuda.h>

#include "h200_attributes.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

// cuda.h declares the old ABI's cuCtxCreate_v2 only for the driver's own
// build; the tests resolve it by that name (test_cuda_launch.cpp does too).
extern "C" CUresult CUDAAPI cuCtxCreate_v2(CUcontext* context,
                                           unsigned int flags, CUdevice device);

namespace {

constexpr int kDevices = 2;
// Few slots, so a handle comes back at once; more than a test holds.
constexpr int kCreatedSlots = 8;
constexpr int kStackDepth = 16;

struct Context {
  unsigned long long id = 0;  // new at every creation or activation
  int device = 0;
  bool alive = false;
  bool primary = false;
  int primary_references = 0;  // primary contexts only
};

// What belongs to a context: alive while that context is, with the same id.
struct Owner {
  Context* context = nullptr;
  unsigned long long context_id = 0;
  bool alive() const { return context->alive && context->id == context_id; }
};

struct Module {
  Owner owner;
  bool loaded = true;
};

struct Model {
  std::mutex mutex;
  std::map<std::string_view, long long> calls;
  bool initialized = false;
  unsigned long long next_context_id = 1;
  uintptr_t next_handle = 0x10000;  // streams, modules, functions
  Context primary[kDevices];
  Context created[kCreatedSlots];
  int created_used = 0;              // slots ever handed out
  std::vector<Context*> free_slots;  // destroyed; the last is reused first
  std::map<CUstream, Owner> streams;
  std::map<CUmodule, Module> modules;
  std::map<CUfunction, CUmodule> functions;
  std::map<CUdeviceptr, std::size_t> allocations;
  long long refused_launches = 0;
  long long run_launches = 0;
  std::map<unsigned long long, long long> runs_by_context;  // by context id
  unsigned long long last_run_context_id = 0;
  CUstream last_run_stream = nullptr;
};

// Never destroyed: the plugin may still call in while the process exits.
Model& model() {
  static Model* const instance = new Model;
  return *instance;
}

// Trivially destructible, so usable at any point of a thread's exit.
thread_local CUcontext current_stack[kStackDepth];
thread_local int current_depth = 0;

CUcontext handle_of(Context& context) {
  return reinterpret_cast<CUcontext>(&context);
}

template <typename Handle>
Handle new_handle(Model& m) {
  m.next_handle += 16;
  return reinterpret_cast<Handle>(m.next_handle);
}

Context* find_context(Model& m, CUcontext handle) {
  for (Context& c : m.primary) {
    if (handle_of(c) == handle) return &c;
  }
  for (Context& c : m.created) {
    if (handle_of(c) == handle) return &c;
  }
  return nullptr;
}

Context* live_context(Model& m, CUcontext handle) {
  Context* context = find_context(m, handle);
  return context != nullptr && context->alive ? context : nullptr;
}

CUcontext current_handle() {
  return current_depth > 0 ? current_stack[current_depth - 1] : nullptr;
}

Context* live_current(Model& m) {
  return live_context(m, current_handle());
}

bool is_special_stream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY ||
         stream == CU_STREAM_PER_THREAD;
}

// The context work on `stream` runs in.
CUresult context_of(Model& m, CUstream stream, Context** out) {
  if (is_special_stream(stream)) {
    *out = live_current(m);
    return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  }
  const auto found = m.streams.find(stream);
  if (found == m.streams.end() || !found->second.alive()) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *out = found->second.context;
  return CUDA_SUCCESS;
}

// The module of a live function, or nullptr.
const Module* module_of(Model& m, CUfunction function) {
  const auto found = m.functions.find(function);
  if (found == m.functions.end()) return nullptr;
  const auto module = m.modules.find(found->second);
  if (module == m.modules.end() || !module->second.loaded ||
      !module->second.owner.alive()) {
    return nullptr;
  }
  return &module->second;
}

bool valid_device(CUdevice device) {
  return device >= 0 && device < kDevices;
}

// Every entry point: one call counted under `name`, the model locked for
// the whole call, and refused before cuInit unless it `Needs::nothing`.
enum class Needs { nothing, init };

template <typename Body>
CUresult entry(std::string_view name, Needs needs, Body&& body) {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  ++m.calls[name];
  if (needs == Needs::init && !m.initialized) {
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  return body(m);
}

struct ErrorText {
  CUresult result;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
};

const ErrorText* error_text(CUresult result) {
  for (const ErrorText& e : kErrors) {
    if (e.result == result) return &e;
  }
  return nullptr;
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------------------
// The counters, for the tests
// ---------------------------------------------------------------------------
__attribute__((visibility("default"))) long long model_libcuda_calls(
    const char* name) {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  const auto found = m.calls.find(name);
  return found != m.calls.end() ? found->second : 0;
}
__attribute__((visibility("default"))) long long
model_libcuda_refused_launches() {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  return m.refused_launches;
}
__attribute__((visibility("default"))) long long model_libcuda_run_launches() {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  return m.run_launches;
}
// Launches that ran in the context with this id (cuCtxGetId), from any
// thread: what concurrent launches on several devices are judged by.
__attribute__((visibility("default"))) long long model_libcuda_runs_in_context(
    unsigned long long context_id) {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  const auto found = m.runs_by_context.find(context_id);
  return found != m.runs_by_context.end() ? found->second : 0;
}
__attribute__((visibility("default"))) unsigned long long
model_libcuda_last_run_context_id() {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  return m.last_run_context_id;
}
__attribute__((visibility("default"))) void* model_libcuda_last_run_stream() {
  Model& m = model();
  const std::lock_guard lock(m.mutex);
  return m.last_run_stream;
}

// ---------------------------------------------------------------------------
// Initialization, errors, devices
// ---------------------------------------------------------------------------
CUresult CUDAAPI cuInit(unsigned int flags) {
  return entry("cuInit", Needs::nothing, [&](Model& m) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    m.initialized = true;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuDriverGetVersion(int* version) {
  return entry("cuDriverGetVersion", Needs::nothing, [&](Model&) {
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuGetErrorName(CUresult result, const char** name) {
  return entry("cuGetErrorName", Needs::nothing, [&](Model&) {
    const ErrorText* e = error_text(result);
    *name = e != nullptr ? e->name : nullptr;
    return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}
CUresult CUDAAPI cuGetErrorString(CUresult result, const char** text) {
  return entry("cuGetErrorString", Needs::nothing, [&](Model&) {
    const ErrorText* e = error_text(result);
    *text = e != nullptr ? e->text : nullptr;
    return e != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  return entry("cuDeviceGetCount", Needs::init, [&](Model&) {
    *count = kDevices;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  return entry("cuDeviceGet", Needs::init, [&](Model&) {
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
  });
}
// Its devices are one model, as a fleet node's are (tuning results are kept
// per model).
CUresult CUDAAPI cuDeviceGetName(char* name, int length, CUdevice device) {
  return entry("cuDeviceGetName", Needs::init, [&](Model&) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
    std::snprintf(name, static_cast<std::size_t>(length), "%s",
                  "jitwarm model GPU");
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                      CUdevice device) {
  return entry("cuDeviceGetAttribute", Needs::init, [&](Model&) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *value = jitwarm::fake_driver::h200_attribute(attribute);
    return CUDA_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  return entry("cuDevicePrimaryCtxRetain", Needs::init, [&](Model& m) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    Context& primary = m.primary[device];
    if (primary.primary_references++ == 0) {
      primary.id = m.next_context_id++;
      primary.device = device;
      primary.primary = true;
      primary.alive = true;
    }
    *context = handle_of(primary);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  return entry("cuDevicePrimaryCtxRelease", Needs::init, [&](Model& m) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    Context& primary = m.primary[device];
    if (primary.primary_references == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--primary.primary_references == 0) primary.alive = false;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice device,
                                            unsigned int* flags, int* active) {
  return entry("cuDevicePrimaryCtxGetState", Needs::init, [&](Model& m) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = m.primary[device].primary_references > 0 ? 1 : 0;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxCreate_v2(CUcontext* context, unsigned int flags,
                                CUdevice device) {
  return entry("cuCtxCreate", Needs::init, [&](Model& m) {
    if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (current_depth == kStackDepth) return CUDA_ERROR_OUT_OF_MEMORY;
    Context* slot = nullptr;
    if (!m.free_slots.empty()) {
      slot = m.free_slots.back();
      m.free_slots.pop_back();
    } else if (m.created_used < kCreatedSlots) {
      slot = &m.created[m.created_used++];
    } else {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    slot->id = m.next_context_id++;
    slot->device = device;
    slot->alive = true;
    *context = handle_of(*slot);
    current_stack[current_depth++] = *context;  // created current
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxDestroy(CUcontext context) {
  return entry("cuCtxDestroy", Needs::init, [&](Model& m) {
    Context* destroyed = live_context(m, context);
    if (destroyed == nullptr || destroyed->primary) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
    destroyed->alive = false;
    if (current_handle() == context) --current_depth;
    m.free_slots.push_back(destroyed);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxPushCurrent(CUcontext context) {
  return entry("cuCtxPushCurrent", Needs::init, [&](Model& m) {
    if (live_context(m, context) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (current_depth == kStackDepth) return CUDA_ERROR_OUT_OF_MEMORY;
    current_stack[current_depth++] = context;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext* context) {
  return entry("cuCtxPopCurrent", Needs::init, [&](Model&) {
    if (current_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    const CUcontext popped = current_stack[--current_depth];
    if (context != nullptr) *context = popped;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  return entry("cuCtxSetCurrent", Needs::init, [&](Model& m) {
    // NULL pops (nothing when the stack is empty); another replaces the top.
    if (context == nullptr) {
      if (current_depth > 0) --current_depth;
      return CUDA_SUCCESS;
    }
    if (live_context(m, context) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (current_depth == 0) ++current_depth;
    current_stack[current_depth - 1] = context;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  return entry("cuCtxGetCurrent", Needs::init, [&](Model&) {
    *context = current_handle();
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  return entry("cuCtxGetDevice", Needs::init, [&](Model& m) {
    const Context* current = live_current(m);
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *device = current->device;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxGetId(CUcontext context, unsigned long long* id) {
  return entry("cuCtxGetId", Needs::init, [&](Model& m) {
    const Context* of =
        context == nullptr ? live_current(m) : live_context(m, context);
    if (of == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *id = of->id;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuCtxSynchronize(void) {
  return entry("cuCtxSynchronize", Needs::init, [&](Model& m) {
    return live_current(m) != nullptr ? CUDA_SUCCESS
                                      : CUDA_ERROR_INVALID_CONTEXT;
  });
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  return entry("cuStreamCreate", Needs::init, [&](Model& m) {
    Context* current = live_current(m);
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *stream = new_handle<CUstream>(m);
    m.streams[*stream] = Owner{current, current->id};
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  return entry("cuStreamDestroy", Needs::init, [&](Model& m) {
    return m.streams.erase(stream) == 1 ? CUDA_SUCCESS
                                        : CUDA_ERROR_INVALID_HANDLE;
  });
}
CUresult CUDAAPI cuStreamGetCtx(CUstream stream, CUcontext* context) {
  return entry("cuStreamGetCtx", Needs::init, [&](Model& m) {
    Context* of = nullptr;
    const CUresult result = context_of(m, stream, &of);
    if (result == CUDA_SUCCESS) *context = handle_of(*of);
    return result;
  });
}
CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  return entry("cuStreamSynchronize", Needs::init, [&](Model& m) {
    Context* of = nullptr;
    return context_of(m, stream, &of);
  });
}

// ---------------------------------------------------------------------------
// Modules and launches
// ---------------------------------------------------------------------------
CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  return entry("cuModuleLoadData", Needs::init, [&](Model& m) {
    Context* current = live_current(m);
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *module = new_handle<CUmodule>(m);
    m.modules[*module] = Module{Owner{current, current->id}, true};
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  return entry("cuModuleUnload", Needs::init, [&](Model& m) {
    const auto found = m.modules.find(module);
    if (found == m.modules.end() || !found->second.loaded) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    found->second.loaded = false;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuModuleGetFunction(CUfunction* function, CUmodule module,
                                     const char* name) {
  return entry("cuModuleGetFunction", Needs::init, [&](Model& m) {
    const auto found = m.modules.find(module);
    if (found == m.modules.end() || !found->second.loaded ||
        !found->second.owner.alive()) {
      return CUDA_ERROR_INVALID_HANDLE;
    }
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *function = new_handle<CUfunction>(m);
    m.functions[*function] = module;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuFuncGetAttribute(int* value, CUfunction_attribute attribute,
                                    CUfunction function) {
  return entry("cuFuncGetAttribute", Needs::init, [&](Model& m) {
    if (module_of(m, function) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int, unsigned int,
                                unsigned int, unsigned int, unsigned int,
                                unsigned int, unsigned int, CUstream stream,
                                void**, void**) {
  return entry("cuLaunchKernel", Needs::init, [&](Model& m) {
    Context* launch_context = nullptr;
    const CUresult result = context_of(m, stream, &launch_context);
    if (result != CUDA_SUCCESS) return result;
    const Module* module = module_of(m, function);
    if (module == nullptr || module->owner.context != launch_context ||
        module->owner.context_id != launch_context->id) {
      ++m.refused_launches;
      return CUDA_ERROR_INVALID_HANDLE;
    }
    ++m.run_launches;
    ++m.runs_by_context[launch_context->id];
    m.last_run_context_id = launch_context->id;
    m.last_run_stream = stream;
    return CUDA_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------
CUresult CUDAAPI cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  return entry("cuMemAlloc", Needs::init, [&](Model& m) {
    if (live_current(m) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    *pointer = reinterpret_cast<CUdeviceptr>(memory);
    m.allocations[*pointer] = bytes;
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  return entry("cuMemFree", Needs::init, [&](Model& m) {
    if (m.allocations.erase(pointer) != 1) return CUDA_ERROR_INVALID_VALUE;
    std::free(reinterpret_cast<void*>(pointer));
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  return entry("cuMemcpyHtoD", Needs::init, [&](Model&) {
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  return entry("cuMemcpyDtoH", Needs::init, [&](Model&) {
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
  });
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src,
                                   size_t bytes, CUstream stream) {
  return entry("cuMemcpyHtoDAsync", Needs::init, [&](Model& m) {
    Context* of = nullptr;
    const CUresult result = context_of(m, stream, &of);
    if (result == CUDA_SUCCESS) {
      std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    }
    return result;
  });
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes,
                                   CUstream stream) {
  return entry("cuMemcpyDtoHAsync", Needs::init, [&](Model& m) {
    Context* of = nullptr;
    const CUresult result = context_of(m, stream, &of);
    if (result == CUDA_SUCCESS) {
      std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    }
    return result;
  });
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes, CUstream stream) {
  return entry("cuMemcpyDtoDAsync", Needs::init, [&](Model& m) {
    Context* of = nullptr;
    const CUresult result = context_of(m, stream, &of);
    if (result == CUDA_SUCCESS) {
      std::memmove(reinterpret_cast<void*>(dst),
                   reinterpret_cast<const void*>(src), bytes);
    }
    return result;
  });
}

}  // extern "C"
