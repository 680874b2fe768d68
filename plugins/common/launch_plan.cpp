// plan_launch and KernelArguments::pack: the host half of every kernel's
// launch rule (the device half is in the kernel's .cuh header comment).
#include "launch_plan.hpp"

#include "kernel_set.hpp"
#include "key_params.hpp"
#include "plugin_support.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace jitwarm::gpu {
namespace ks = jitwarm::kernel_set;

namespace {

constexpr __int128 kOne = 1;

// --- reading launch arguments -----------------------------------------

const jw_arg_value& arg_at(const KeyParams& key,
                           std::span<const jw_arg_value> args, uint32_t i) {
  const jw_arg_value& arg = args[i];
  if (arg.struct_size < offsetof(jw_arg_value, value) + sizeof(arg.value)) {
    key.fail(i, "was passed a jw_arg_value of unknown size " +
                    std::to_string(arg.struct_size));
  }
  return arg;
}

const jw_tensor& runtime_tensor(const KeyParams& key,
                                std::span<const jw_arg_value> args,
                                uint32_t i) {
  const jw_arg_value& arg = arg_at(key, args, i);
  if (arg.kind == JW_VALUE_WARMUP_TENSOR) {
    key.fail(i, "is a warmup tensor (metadata only): a launch needs storage");
  }
  if (arg.kind != JW_VALUE_TENSOR || arg.value.tensor == nullptr) {
    key.fail(i, "needs a tensor");
  }
  const jw_tensor& tensor = *arg.value.tensor;
  if (tensor.struct_size <
      offsetof(jw_tensor, device_index) + sizeof(int32_t)) {
    key.fail(i, "was passed a jw_tensor of unknown size " +
                    std::to_string(tensor.struct_size));
  }
  return tensor;
}

std::string int128_text(__int128 value) {
  const bool negative = value < 0;
  unsigned __int128 magnitude =
      negative ? static_cast<unsigned __int128>(-(value + 1)) + 1
               : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + magnitude % 10));
    magnitude /= 10;
  } while (magnitude != 0);
  return negative ? "-" + digits : digits;
}

// An integer argument as a mathematical value.
__int128 integer_value(const KeyParams& key, std::span<const jw_arg_value> args,
                       uint32_t i) {
  const jw_arg_value& arg = arg_at(key, args, i);
  if (arg.kind != JW_VALUE_SCALAR) key.fail(i, "needs an integer");
  switch (arg.value.scalar.kind) {
    case JW_SCALAR_INT:
    case JW_SCALAR_BOOL: return arg.value.scalar.value.i;
    case JW_SCALAR_UINT: return static_cast<__int128>(arg.value.scalar.value.u);
    default: key.fail(i, "needs an integer");
  }
}

double float_value(const KeyParams& key, std::span<const jw_arg_value> args,
                   uint32_t i) {
  const jw_arg_value& arg = arg_at(key, args, i);
  if (arg.kind != JW_VALUE_SCALAR) key.fail(i, "needs a float");
  switch (arg.value.scalar.kind) {
    case JW_SCALAR_FLOAT: return arg.value.scalar.value.f;
    case JW_SCALAR_INT:
    case JW_SCALAR_BOOL: return static_cast<double>(arg.value.scalar.value.i);
    case JW_SCALAR_UINT: return static_cast<double>(arg.value.scalar.value.u);
    default: key.fail(i, "needs a float");
  }
}

// A size or count argument: an integer in [0, 2^63).
int64_t count_value(const KeyParams& key, std::span<const jw_arg_value> args,
                    uint32_t i) {
  const __int128 value = integer_value(key, args, i);
  if (value < 0 || value > INT64_MAX) {
    key.fail(i, "must be a count in [0, 2^63), got " + int128_text(value));
  }
  return static_cast<int64_t>(value);
}

int64_t extent(const KeyParams& key, std::span<const jw_arg_value> args,
               uint32_t i, uint32_t dimension) {
  const jw_tensor& tensor = runtime_tensor(key, args, i);
  if (tensor.meta.rank <= dimension) {
    key.fail(i, "has rank " + std::to_string(tensor.meta.rank) +
                    "; dimension " + std::to_string(dimension) + " is needed");
  }
  const int64_t value = tensor.meta.shape[dimension];
  if (value < 0) key.fail(i, "has a negative extent");
  return value;
}

// Shape checks against the integer arguments: the device cannot check them
// and would read or write out of bounds (the core checks ranks and dtypes,
// not these relations).
void require_at_least(const KeyParams& key, std::span<const jw_arg_value> args,
                      uint32_t tensor, uint32_t dimension, int64_t needed,
                      const char* why) {
  const int64_t have = extent(key, args, tensor, dimension);
  if (have < needed) {
    key.fail(tensor, "has " + std::to_string(have) + " in dimension " +
                         std::to_string(dimension) + "; " + why + " needs " +
                         std::to_string(needed));
  }
}
void require_exactly(const KeyParams& key, std::span<const jw_arg_value> args,
                     uint32_t tensor, uint32_t dimension, int64_t needed,
                     const char* why) {
  const int64_t have = extent(key, args, tensor, dimension);
  if (have != needed) {
    key.fail(tensor, "has " + std::to_string(have) + " in dimension " +
                         std::to_string(dimension) + "; " + why + " needs " +
                         std::to_string(needed));
  }
}

std::string int_type_name(jw_int_type type) {
  return type == JW_INT_I32 ? "i32" : type == JW_INT_I64 ? "i64" : "u64";
}

// --- geometry helpers ----------------------------------------------------

uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// Threads for `accesses` parallel accesses: whole warps, within the
// function's limit and `cap`.
uint32_t block_threads(uint64_t accesses, const DeviceLimits& limits,
                       uint32_t cap) {
  const uint32_t warp = std::max<uint32_t>(limits.warp_size, 1);
  const uint32_t limit = std::min(cap, limits.max_threads_per_block);
  const uint32_t upper = std::max(warp, limit / warp * warp);
  const uint64_t wanted =
      ceil_div(std::max<uint64_t>(accesses, 1), warp) * warp;
  return static_cast<uint32_t>(std::clamp<uint64_t>(wanted, warp, upper));
}

// Token-level kernels run one group of `lanes` threads per request and
// `requests_per_block` groups per block: lanes is the power of two that covers
// a request's tokens (at most a warp, so a group never spans warps), and the
// block holds 256 threads.
struct RequestGroups {
  uint32_t lanes = 1;
  uint32_t requests_per_block = 1;
};
// Requests a lane group takes per pass (kernel_support.cuh's
// kRequestsPerGroup; the kernels stride their requests, so this only sizes
// the grid).
constexpr uint64_t kRequestsPerGroup = 4;

RequestGroups request_groups(uint64_t tokens_per_request,
                             const DeviceLimits& limits) {
  const uint32_t warp = std::max<uint32_t>(limits.warp_size, 1);
  uint32_t lanes = 1;
  while (lanes < tokens_per_request && lanes < warp) lanes *= 2;
  const uint32_t threads =
      std::max(warp, std::min<uint32_t>(256, limits.max_threads_per_block) /
                         warp * warp);
  return RequestGroups{lanes, std::max<uint32_t>(1, threads / lanes)};
}

uint32_t capped(uint64_t count, uint32_t max) {
  return static_cast<uint32_t>(std::min<uint64_t>(count, max));
}

// The block size baked into the binary, which the function must allow.
uint32_t fixed_threads(const KernelInstantiation& instantiation,
                       const KeyParams& key, const DeviceLimits& limits) {
  const uint32_t threads = instantiation.fixed_block_threads;
  if (threads == 0 || threads > limits.max_threads_per_block) {
    throw plugin::PluginError(
        JW_ERROR_LAUNCH_FAILED,
        std::string(key.text()) + ": the binary needs " +
            std::to_string(threads) + " threads per block; the loaded " +
            "function allows " + std::to_string(limits.max_threads_per_block));
  }
  return threads;
}

// Elements per access of an instantiation for these run-time sizes (the
// kernel takes the same decision; kernel_support.cuh kVectorIfSizesAllow).
uint32_t elements_per_access(const KernelInstantiation& instantiation,
                             jw_dtype dtype,
                             std::initializer_list<__int128> sizes) {
  const uint32_t per_vector = 16 / dtype_bytes(dtype);
  switch (instantiation.vector_mode) {
    case VectorMode::always: return per_vector;
    case VectorMode::if_sizes_allow:
      for (__int128 size : sizes) {
        if ((size * dtype_bytes(dtype)) % 16 != 0) return 1;
      }
      return per_vector;
    case VectorMode::never: break;
  }
  return 1;
}

uint32_t exact_grid_x(const KeyParams& key, uint32_t param, int64_t programs,
                      const DeviceLimits& limits) {
  if (static_cast<uint64_t>(programs) > limits.max_grid.x) {
    key.fail(param, "gives " + std::to_string(programs) +
                        " programs; the grid allows " +
                        std::to_string(limits.max_grid.x));
  }
  return static_cast<uint32_t>(programs);
}

}  // namespace

std::string LaunchGeometry::text() const {
  // Appends rather than `"(" + ...`, which trips GCC 12's false -Wrestrict
  // (GCC bug 105329) in optimized builds.
  auto dims = [](const Dim3& d) {
    std::string text("(");
    text.append(std::to_string(d.x)).append(", ").append(std::to_string(d.y));
    text.append(", ").append(std::to_string(d.z)).append(")");
    return text;
  };
  std::string text = "grid " + dims(grid) + " block " + dims(block);
  if (shared_memory_bytes != 0) {
    text += " shared " + std::to_string(shared_memory_bytes) + " B";
  }
  return text;
}

// --- KernelArguments -------------------------------------------------------

KernelArguments::KernelArguments(KernelArguments&& other) noexcept
    : slots_(other.slots_),
      sizes_(other.sizes_),
      count_(other.count_),
      device_(other.device_) {
  // The pointers must name this object's slots, not the moved-from ones.
  for (std::size_t i = 0; i < count_; ++i) pointers_[i] = &slots_[i];
}

template <typename T>
void KernelArguments::push(T value) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  if (count_ == kMaxParameters) {
    throw plugin::PluginError(JW_ERROR_INTERNAL, "too many kernel parameters");
  }
  std::memcpy(&slots_[count_], &value, sizeof(T));
  pointers_[count_] = &slots_[count_];
  sizes_[count_] = sizeof(T);
  ++count_;
}

KernelArguments KernelArguments::pack(const jw_compile_key_view& key,
                                      std::span<const jw_arg_value> args) {
  const KeyParams params(key,
                         key.kernel_name != nullptr ? key.kernel_name : "");
  if (args.size() != key.num_params) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": launched with " +
            std::to_string(args.size()) + " arguments; the key has " +
            std::to_string(key.num_params) + " parameters");
  }
  KernelArguments packed;
  auto push_integer = [&](uint32_t i, jw_int_spec spec) {
    const __int128 value = integer_value(params, args, i);
    const bool fits = spec.type == JW_INT_I32
                          ? value >= -(kOne << 31) && value < (kOne << 31)
                      : spec.type == JW_INT_I64
                          ? value >= -(kOne << 63) && value < (kOne << 63)
                          : value >= 0 && value < (kOne << 64);
    if (!fits) {
      params.fail(i, "= " + int128_text(value) +
                         " does not fit the key's type " +
                         int_type_name(spec.type));
    }
    if (spec.value_class == JW_INT_CLASS_ONE && value != 1) {
      params.fail(i, "is not 1, which the key specialized on");
    }
    if (spec.value_class == JW_INT_CLASS_DIV16 && value % 16 != 0) {
      params.fail(i, "is not divisible by 16, which the key specialized on");
    }
    switch (spec.type) {
      case JW_INT_I32: packed.push(static_cast<int32_t>(value)); break;
      case JW_INT_I64: packed.push(static_cast<int64_t>(value)); break;
      case JW_INT_U64: packed.push(static_cast<uint64_t>(value)); break;
    }
  };
  auto push_float = [&](uint32_t i, jw_float_type type) {
    const double value = float_value(params, args, i);
    if (type == JW_FLOAT_F64) {
      packed.push(value);
    } else {
      packed.push(static_cast<float>(value));
    }
  };

  for (uint32_t i = 0; i < key.num_params; ++i) {
    const jw_param_spec& spec = key.params[i];
    switch (spec.kind) {
      case JW_PARAM_TENSOR: {
        const jw_tensor& tensor = runtime_tensor(params, args, i);
        if (tensor.meta.dtype != spec.dtype) {
          params.fail(i,
                      "has dtype " +
                          std::to_string(static_cast<int>(tensor.meta.dtype)) +
                          "; the key was compiled for dtype " +
                          std::to_string(static_cast<int>(spec.dtype)));
        }
        if (spec.alignment == JW_ALIGN_16 &&
            reinterpret_cast<uintptr_t>(tensor.data) % 16 != 0) {
          params.fail(i,
                      "is not 16-byte aligned, which the key specialized on");
        }
        if (tensor.device_index < 0) {
          params.fail(i, "is in host memory; a GPU launch needs device memory");
        }
        if (packed.device_ >= 0 && packed.device_ != tensor.device_index) {
          params.fail(i, "is on device " + std::to_string(tensor.device_index) +
                             "; earlier tensors are on device " +
                             std::to_string(packed.device_));
        }
        packed.device_ = tensor.device_index;
        packed.push(tensor.data);
        break;
      }
      case JW_PARAM_INT: push_integer(i, params.int_spec(i)); break;
      case JW_PARAM_FLOAT: push_float(i, params.float_type(i)); break;
      case JW_PARAM_SCALAR:
        if (params.scalar_kind(i) == JW_SCALAR_FLOAT) {
          push_float(i, params.float_type(i));
        } else {
          push_integer(i, params.int_spec(i));
        }
        break;
      case JW_PARAM_CONSTEXPR: {
        // Baked into the binary: the launch must agree with the key.
        const jw_scalar& compiled = spec.constexpr_value;
        const bool floating = compiled.kind == JW_SCALAR_FLOAT;
        const bool same =
            floating ? float_value(params, args, i) == compiled.value.f
                     : integer_value(params, args, i) ==
                           (compiled.kind == JW_SCALAR_UINT
                                ? static_cast<__int128>(compiled.value.u)
                                : static_cast<__int128>(compiled.value.i));
        if (!same) params.fail(i, "differs from the value the key compiled in");
        break;
      }
    }
  }
  if (packed.device_ < 0) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": no tensor argument names a device");
  }
  // Extents a kernel needs that no schema parameter carries travel as
  // trailing parameters (each kernel's signature documents its own):
  // expand runs several requests per block, so it must know B.
  if (std::string_view(key.kernel_name) == ks::kExpand) {
    packed.push(static_cast<int64_t>(extent(params, args, ks::expand::x, 0)));
  }
  return packed;
}

// --- ArgumentPacking ---------------------------------------------------------

ArgumentPacking::ArgumentPacking(const jw_compile_key_view& key)
    : key_text_(key.text != nullptr ? key.text : "") {
  const KeyParams params(key,
                         key.kernel_name != nullptr ? key.kernel_name : "");
  bool seen_tensor = false;
  for (uint32_t i = 0; i < key.num_params; ++i) {
    Slot slot = Slot::skip;
    switch (params.param(i).kind) {
      case JW_PARAM_TENSOR:
        slot = Slot::pointer;
        if (!seen_tensor) first_tensor_ = i;
        seen_tensor = true;
        break;
      case JW_PARAM_INT: {
        const jw_int_type type = params.int_spec(i).type;
        slot = type == JW_INT_I32   ? Slot::i32
               : type == JW_INT_I64 ? Slot::i64
                                    : Slot::u64;
        break;
      }
      case JW_PARAM_FLOAT:
        slot = params.float_type(i) == JW_FLOAT_F64 ? Slot::f64 : Slot::f32;
        break;
      case JW_PARAM_SCALAR:
        if (params.scalar_kind(i) == JW_SCALAR_FLOAT) {
          slot = params.float_type(i) == JW_FLOAT_F64 ? Slot::f64 : Slot::f32;
        } else {
          const jw_int_type type = params.int_spec(i).type;
          slot = type == JW_INT_I32   ? Slot::i32
                 : type == JW_INT_I64 ? Slot::i64
                                      : Slot::u64;
        }
        break;
      case JW_PARAM_CONSTEXPR: break;  // baked into the binary
    }
    if (i >= slots_.size()) {
      throw plugin::PluginError(
          JW_ERROR_INTERNAL,
          std::string(params.text()) + ": too many kernel parameters");
    }
    slots_[i] = slot;
  }
  if (!seen_tensor) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": no tensor argument names a device");
  }
  count_ = key.num_params;
  // Extents a kernel needs that no schema parameter carries travel as
  // trailing parameters (each kernel's signature documents its own):
  // expand runs several requests per block, so it must know B.
  expand_batch_ = std::string_view(key.kernel_name) == ks::kExpand;
  expand_x_ = ks::expand::x;
}

int32_t ArgumentPacking::device(std::span<const jw_arg_value> args) const {
  const int32_t device = args[first_tensor_].value.tensor->device_index;
  if (device < 0) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              key_text_ +
                                  ": tensors are in host memory; a GPU "
                                  "launch needs device memory");
  }
  return device;
}

KernelArguments ArgumentPacking::pack(
    std::span<const jw_arg_value> args) const {
  KernelArguments packed;
  const auto integer = [&](uint32_t i) -> uint64_t {
    const jw_scalar& s = args[i].value.scalar;
    return s.kind == JW_SCALAR_UINT ? s.value.u
                                    : static_cast<uint64_t>(s.value.i);
  };
  const auto floating = [&](uint32_t i) {
    const jw_scalar& s = args[i].value.scalar;
    return s.kind == JW_SCALAR_FLOAT  ? s.value.f
           : s.kind == JW_SCALAR_UINT ? static_cast<double>(s.value.u)
                                      : static_cast<double>(s.value.i);
  };
  for (uint32_t i = 0; i < count_; ++i) {
    switch (slots_[i]) {
      case Slot::skip: break;
      case Slot::pointer: packed.push(args[i].value.tensor->data); break;
      case Slot::i32: packed.push(static_cast<int32_t>(integer(i))); break;
      case Slot::i64: packed.push(static_cast<int64_t>(integer(i))); break;
      case Slot::u64: packed.push(integer(i)); break;
      case Slot::f32: packed.push(static_cast<float>(floating(i))); break;
      case Slot::f64: packed.push(floating(i)); break;
    }
  }
  packed.device_ = args[first_tensor_].value.tensor->device_index;
  if (expand_batch_) {
    packed.push(args[expand_x_].value.tensor->meta.shape[0]);
  }
  return packed;
}

// --- plan_launch -------------------------------------------------------------

LaunchGeometry plan_launch(const KernelInstantiation& instantiation,
                           const jw_compile_key_view& key,
                           std::span<const jw_arg_value> args,
                           const DeviceLimits& limits) {
  return plan_launch(instantiation,
                     KeyParams(key, schema_name(instantiation.kernel)), args,
                     limits);
}

LaunchGeometry plan_launch(const KernelInstantiation& instantiation,
                           const KeyParams& params,
                           std::span<const jw_arg_value> args,
                           const DeviceLimits& limits) {
  const jw_compile_key_view& key = params.key();
  if (args.size() != key.num_params) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": wrong number of launch arguments");
  }
  LaunchGeometry g;
  switch (instantiation.kernel) {
    case GpuKernel::compute_slot_mapping: {
      namespace p = ks::compute_slot_mapping;
      const int64_t requests = count_value(params, args, p::num_reqs);
      const int64_t max_tokens = count_value(params, args, p::max_num_tokens);
      if (integer_value(params, args, p::block_size) < 1) {
        params.fail(p::block_size, "must be at least 1");
      }
      require_at_least(params, args, p::query_start_loc, 0, requests + 1,
                       "num_reqs + 1");
      require_at_least(params, args, p::block_table, 0, requests, "num_reqs");
      require_at_least(params, args, p::slot_mapping, 0, max_tokens,
                       "max_num_tokens");
      // A group of lanes per request sized to the mean tokens per request
      // (max_num_tokens / num_reqs bounds it), several requests per block.
      const RequestGroups groups = request_groups(
          ceil_div(static_cast<uint64_t>(max_tokens),
                   static_cast<uint64_t>(std::max<int64_t>(requests, 1))),
          limits);
      g.block.x = groups.lanes;
      g.block.y = groups.requests_per_block;
      const uint64_t request_blocks =
          ceil_div(static_cast<uint64_t>(requests),
                   groups.requests_per_block * kRequestsPerGroup);
      // Every block also shares the padding tail [num_tokens,
      // max_num_tokens), which is not known on the host; enough blocks for
      // the worst case, a few per SM at most.
      const uint64_t tail = std::clamp<uint64_t>(
          ceil_div(static_cast<uint64_t>(max_tokens),
                   uint64_t{groups.lanes} * groups.requests_per_block * 4ull),
          1, 2ull * limits.multiprocessor_count);
      g.grid.x = capped(std::max(request_blocks, tail), limits.max_grid.x);
      break;
    }
    case GpuKernel::expand: {
      namespace p = ks::expand;
      const int64_t batch = extent(params, args, p::x, 0);
      const int64_t max_tokens =
          params.constexpr_int(p::MAX_NUM_TOKENS, 1, INT32_MAX);
      require_at_least(params, args, p::cu_num_tokens, 0, batch, "x's length");
      if (params.dtype(p::x) != JW_DTYPE_FLOAT32) {
        // Stored into x's dtype on the device: it must fit (as the
        // reference requires) rather than wrap.
        const __int128 to = integer_value(params, args, p::replace_to);
        const bool narrow = params.dtype(p::x) == JW_DTYPE_INT32;
        const __int128 low = narrow ? -(kOne << 31) : -(kOne << 63);
        const __int128 high = narrow ? (kOne << 31) : (kOne << 63);
        if (to < low || to >= high) {
          params.fail(p::replace_to,
                      "= " + int128_text(to) + " does not fit x's dtype");
        }
      }
      // A group of lanes per request, sized to its most tokens, and as many
      // requests per block as fill 256 threads.
      const RequestGroups groups = request_groups(max_tokens, limits);
      g.block.x = groups.lanes;
      g.block.y = groups.requests_per_block;
      g.grid.x = capped(ceil_div(static_cast<uint64_t>(batch),
                                 groups.requests_per_block * kRequestsPerGroup),
                        limits.max_grid.x);
      break;
    }
    case GpuKernel::batch_memcpy: {
      namespace p = ks::batch_memcpy;
      const int64_t copies = count_value(params, args, p::num_copies);
      for (uint32_t t : {p::src_ptrs, p::dst_ptrs, p::sizes}) {
        require_at_least(params, args, t, 0, copies, "num_copies");
      }
      g.block.x = fixed_threads(instantiation, params, limits);
      // A block takes a batch of one copy per warp (batch_memcpy.cuh); the
      // kernel strides the batches, so a cap only costs parallelism.
      const uint64_t group_lanes = std::min(g.block.x, limits.warp_size);
      const uint64_t batches =
          ceil_div(static_cast<uint64_t>(copies), g.block.x / group_lanes);
      g.grid.x = capped(batches, limits.max_grid.x);
      // Sizes live on the device; split each batch's copies so that even
      // one copy spreads over the GPU. Blocks with nothing to do leave at
      // once.
      g.grid.y =
          copies == 0
              ? 0
              : capped(
                    std::clamp<uint64_t>(
                        ceil_div(4ull * limits.multiprocessor_count, batches),
                        1, 256),
                    limits.max_grid.y);
      break;
    }
    case GpuKernel::zero_kv_blocks: {
      namespace p = ks::zero_kv_blocks;
      const int64_t blocks = count_value(params, args, p::n_blocks);
      const int64_t segments = count_value(params, args, p::n_segments);
      require_at_least(params, args, p::block_ids, 0, blocks, "n_blocks");
      for (uint32_t t :
           {p::seg_addrs, p::seg_block_stride, p::seg_block_bytes}) {
        require_at_least(params, args, t, 0, segments, "n_segments");
      }
      g.block.x = block_threads(256, limits, 256);
      g.grid.x = capped(static_cast<uint64_t>(blocks), limits.max_grid.x);
      g.grid.y = capped(static_cast<uint64_t>(segments), limits.max_grid.y);
      break;
    }
    case GpuKernel::scatter_states: {
      namespace p = ks::scatter_states;
      const int64_t rows = count_value(params, args, p::num_rows);
      const int64_t row_size =
          params.constexpr_int(p::ROW_SIZE, 0, int64_t{1} << 40);
      require_exactly(params, args, p::state, 1, row_size, "ROW_SIZE");
      require_exactly(params, args, p::src, 1, row_size, "ROW_SIZE");
      require_at_least(params, args, p::src, 0, rows, "num_rows");
      require_at_least(params, args, p::indices, 0, rows, "num_rows");
      g.block.x = fixed_threads(instantiation, params, limits);
      g.grid.x = capped(static_cast<uint64_t>(rows), limits.max_grid.x);
      break;
    }
    case GpuKernel::pack_seq:
    case GpuKernel::unpack_seq: {
      const PackUnpackParams p =
          pack_unpack_params(instantiation.kernel == GpuKernel::pack_seq);
      const int64_t tile_t = params.constexpr_int(p.block_t, 1, 1 << 16);
      const int64_t tile_d = params.constexpr_int(p.block_d, 1, 1 << 16);
      const int64_t batch = extent(params, args, p.lengths, 0);
      const int64_t rows = count_value(params, args, p.n);
      const int64_t columns = count_value(params, args, p.d);
      const int64_t positions = count_value(params, args, p.l_max);
      require_at_least(params, args, p.flat, 0, rows, "N");
      require_exactly(params, args, p.flat, 1, columns, "D");
      require_at_least(params, args, p.padded, 0, batch, "lengths' size");
      require_exactly(params, args, p.padded, 1, positions, "L_max");
      require_exactly(params, args, p.padded, 2, columns, "D");
      g.block.x = fixed_threads(instantiation, params, limits);
      g.grid.x = exact_grid_x(params, p.lengths, batch, limits);
      g.grid.y = capped(ceil_div(static_cast<uint64_t>(positions),
                                 static_cast<uint64_t>(tile_t)),
                        limits.max_grid.y);
      // Every block first sums lengths[0..b) for its start row; once the
      // requests and positions alone give every SM a good number of
      // blocks, a block walks all the column tiles of its rows instead of
      // one, and pays for that sum once (a block per tile spent more time
      // on the sum than on its 8 KiB tile).
      const uint64_t row_blocks = static_cast<uint64_t>(g.grid.x) * g.grid.y;
      const uint64_t wanted_blocks = 16ull * limits.multiprocessor_count;
      g.grid.z = capped(
          std::min(ceil_div(static_cast<uint64_t>(columns),
                            static_cast<uint64_t>(tile_d)),
                   ceil_div(wanted_blocks, std::max<uint64_t>(row_blocks, 1))),
          limits.max_grid.z);
      break;
    }
    case GpuKernel::prepare_pos_seq_lens: {
      namespace p = ks::prepare_pos_seq_lens;
      const int64_t requests = count_value(params, args, p::num_reqs);
      const int64_t slots = count_value(params, args, p::seq_lens_len);
      require_at_least(params, args, p::idx_mapping, 0, requests, "num_reqs");
      require_at_least(params, args, p::query_start_loc, 0, requests + 1,
                       "num_reqs + 1");
      require_at_least(params, args, p::seq_lens, 0, std::max(requests, slots),
                       "max(num_reqs, seq_lens_len)");
      // Groups of lanes per request slot, sized to the mean query length
      // (positions' extent / num_reqs bounds it); blocks stride the slots.
      const int64_t tokens = extent(params, args, p::positions, 0);
      const RequestGroups groups = request_groups(
          ceil_div(static_cast<uint64_t>(std::max<int64_t>(tokens, 1)),
                   static_cast<uint64_t>(std::max<int64_t>(requests, 1))),
          limits);
      g.block.x = groups.lanes;
      g.block.y = groups.requests_per_block;
      g.grid.x =
          capped(ceil_div(static_cast<uint64_t>(std::max(requests, slots)),
                          groups.requests_per_block * kRequestsPerGroup),
                 limits.max_grid.x);
      break;
    }
    case GpuKernel::rms_norm: {
      namespace p = ks::rms_norm;
      const int64_t rows = count_value(params, args, p::T);
      const int64_t hidden = count_value(params, args, p::H);
      require_at_least(params, args, p::x, 0, rows, "T");
      require_exactly(params, args, p::x, 1, hidden, "H");
      require_at_least(params, args, p::out, 0, rows, "T");
      require_exactly(params, args, p::out, 1, hidden, "H");
      require_at_least(params, args, p::weight, 0, hidden, "H");
      const uint32_t per_access = elements_per_access(
          instantiation, params.dtype(p::x),
          {hidden, integer_value(params, args, p::x_stride)});
      // About kCachedAccesses (rms_norm.cuh) accesses per thread: issued
      // together, they keep enough bytes in flight before the reduction.
      g.block.x = block_threads(
          ceil_div(ceil_div(static_cast<uint64_t>(hidden), per_access), 4),
          limits, 1024);
      g.grid.x = hidden == 0
                     ? 0
                     : capped(static_cast<uint64_t>(rows), limits.max_grid.x);
      break;
    }
    case GpuKernel::silu_and_mul: {
      namespace p = ks::silu_and_mul;
      const int64_t rows = count_value(params, args, p::T);
      const int64_t hidden = count_value(params, args, p::H);
      require_at_least(params, args, p::x, 0, rows, "T");
      require_exactly(params, args, p::x, 1, 2 * hidden, "2 * H");
      require_at_least(params, args, p::out, 0, rows, "T");
      require_exactly(params, args, p::out, 1, hidden, "H");
      const uint32_t per_access =
          elements_per_access(instantiation, params.dtype(p::x), {hidden});
      const uint64_t accesses =
          ceil_div(static_cast<uint64_t>(hidden), per_access);
      g.block.x = block_threads(accesses, limits, 256);
      g.grid.x = capped(static_cast<uint64_t>(rows), limits.max_grid.x);
      // Each thread takes Unroll<per_access> (silu_and_mul.cuh) accesses
      // per step.
      const uint64_t unroll = per_access == 1 ? 4 : per_access == 4 ? 2 : 1;
      g.grid.y =
          capped(ceil_div(accesses, g.block.x * unroll), limits.max_grid.y);
      break;
    }
  }
  return g;
}

}  // namespace jitwarm::gpu
