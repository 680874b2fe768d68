// instantiate_kernel: the ten per-kernel mappings from a compile key to a
// template instantiation. Template arguments are listed in the order the
// .cuh files declare them; each records which key parameter decided it.
#include "kernel_instantiation.hpp"

#include "kernel_set.hpp"
#include "key_params.hpp"
#include "plugin_support.hpp"

#include <algorithm>

namespace jitwarm::gpu {
namespace ks = jitwarm::kernel_set;

// kernel_support.cuh uses the numbering of jw_int_class as template values.
static_assert(JW_INT_CLASS_NONE == 0 && JW_INT_CLASS_ONE == 1 &&
              JW_INT_CLASS_DIV16 == 2);

namespace {

constexpr int64_t kInt32Max = 2147483647;
constexpr uint32_t kMaxBlockThreads = 1024;  // kernel_support.cuh
constexpr uint32_t kVectorBytes = 16;

std::string_view class_text(jw_int_class value_class) {
  switch (value_class) {
    case JW_INT_CLASS_ONE: return "the value 1";
    case JW_INT_CLASS_DIV16: return "divisible by 16";
    default: return "no value class";
  }
}

uint32_t round_up(uint64_t value, uint32_t multiple) {
  return static_cast<uint32_t>((value + multiple - 1) / multiple * multiple);
}

// Threads for a block that covers `accesses` accesses per step: whole warps,
// at least one, at most `cap`.
uint32_t threads_for(uint64_t accesses, uint32_t warp_size, uint32_t cap) {
  const uint32_t lower = warp_size;
  const uint32_t upper = std::max(lower, cap / warp_size * warp_size);
  return std::clamp(round_up(std::max<uint64_t>(accesses, 1), warp_size), lower,
                    upper);
}

class InstantiationBuilder {
 public:
  InstantiationBuilder(const KeyParams& key, GpuKernel kernel,
                       std::string source_file, std::string function_template)
      : key_(key) {
    result_.kernel = kernel;
    result_.source_file = std::move(source_file);
    result_.function_template = std::move(function_template);
  }

  void add(std::string spelling, std::string reason) {
    result_.template_arguments.push_back(
        TemplateArgument{std::move(spelling), std::move(reason)});
  }
  // The C++ type of an integer parameter.
  void int_type(uint32_t index) {
    const jw_int_spec spec = key_.int_spec(index);
    add(std::string(int_type_spelling(spec.type)),
        std::string(key_.name(index)) + ": integer type");
  }
  // The value class of an integer parameter (kClassNone/One/Div16).
  void int_class(uint32_t index) {
    const jw_int_spec spec = key_.int_spec(index);
    add(std::to_string(static_cast<int>(spec.value_class)),
        std::string(key_.name(index)) + ": " +
            std::string(class_text(spec.value_class)));
  }
  void float_type(uint32_t index) {
    add(key_.float_type(index) == JW_FLOAT_F64 ? "double" : "float",
        std::string(key_.name(index)) + ": float type");
  }
  void element(uint32_t index) {
    add(std::string(element_type_spelling(key_.dtype(index))),
        std::string(key_.name(index)) + ": dtype");
  }
  void value(int64_t v, std::string reason) {
    add(std::to_string(v), std::move(reason));
  }
  void flag(bool v, std::string reason) {
    add(v ? "true" : "false", std::move(reason));
  }
  void vector_mode(VectorMode mode, std::string reason) {
    static constexpr const char* kWords[] = {
        "never", "if the run-time sizes allow", "always"};
    const int value = static_cast<int>(mode);
    add(std::to_string(value), std::string("16-byte vectors ") + kWords[value] +
                                   ": " + std::move(reason));
    result_.vector_mode = mode;
  }
  KernelInstantiation& result() { return result_; }

 private:
  const KeyParams& key_;
  KernelInstantiation result_;
};

// Tensors that must share the dtype of `index` (the core checks this; a key
// that breaks it cannot come from derive_key, so it is refused).
void require_same_dtype(const KeyParams& key, uint32_t index,
                        std::initializer_list<uint32_t> others) {
  for (uint32_t other : others) {
    if (key.dtype(other) != key.dtype(index)) {
      key.fail(other,
               "must have the dtype of '" + std::string(key.name(index)) + "'");
    }
  }
}

bool is_div16(const KeyParams& key, uint32_t index) {
  return key.int_spec(index).value_class == JW_INT_CLASS_DIV16;
}

std::string aligned_list(const KeyParams& key,
                         std::initializer_list<uint32_t> tensors) {
  std::string text;
  for (uint32_t t : tensors) {
    if (!text.empty()) text += ", ";
    text += std::string(key.name(t)) + (key.aligned16(t) ? " a16" : " a1");
  }
  return text;
}

KernelInstantiation compute_slot_mapping(const KeyParams& key) {
  namespace p = ks::compute_slot_mapping;
  InstantiationBuilder b(key, GpuKernel::compute_slot_mapping,
                         "compute_slot_mapping.cuh",
                         "jw::kernels::compute_slot_mapping");
  b.int_type(p::block_table_stride);
  b.int_class(p::block_table_stride);
  b.int_type(p::num_reqs);
  b.int_type(p::max_num_tokens);
  b.int_type(p::block_size);
  b.int_class(p::block_size);
  const int64_t world = key.constexpr_int(p::cp_world_size, 1, kInt32Max);
  b.value(key.constexpr_int(p::blocks_per_kv_block, 1, kInt32Max),
          "blocks_per_kv_block");
  b.value(world, "cp_world_size");
  b.value(key.constexpr_int(p::cp_rank, 0, world - 1), "cp_rank");
  b.value(key.constexpr_int(p::cp_interleave, 1, kInt32Max), "cp_interleave");
  return b.result();
}

KernelInstantiation expand(const KeyParams& key) {
  namespace p = ks::expand;
  InstantiationBuilder b(key, GpuKernel::expand, "expand.cuh",
                         "jw::kernels::expand");
  require_same_dtype(key, p::x, {p::output});
  const jw_dtype dtype = key.dtype(p::x);
  const jw_scalar_kind wanted =
      dtype == JW_DTYPE_FLOAT32 ? JW_SCALAR_FLOAT : JW_SCALAR_INT;
  b.element(p::x);
  for (uint32_t scalar : {p::replace_from, p::replace_to}) {
    if (key.scalar_kind(scalar) != wanted) {
      key.fail(scalar,
               std::string("must be ") +
                   (wanted == JW_SCALAR_FLOAT ? "a float" : "an integer") +
                   ", like x");
    }
    if (wanted == JW_SCALAR_FLOAT) {
      b.float_type(scalar);
    } else {
      b.int_type(scalar);
    }
  }
  b.value(key.constexpr_int(p::MAX_NUM_TOKENS, 1, kInt32Max), "MAX_NUM_TOKENS");
  return b.result();
}

KernelInstantiation batch_memcpy(const KeyParams& key) {
  namespace p = ks::batch_memcpy;
  InstantiationBuilder b(key, GpuKernel::batch_memcpy, "batch_memcpy.cuh",
                         "jw::kernels::batch_memcpy");
  b.int_type(p::num_copies);
  const int64_t threads = key.constexpr_int(p::BLOCK_SIZE, 1, kMaxBlockThreads);
  b.value(threads, "BLOCK_SIZE: threads per block");
  b.result().fixed_block_threads = static_cast<uint32_t>(threads);
  return b.result();
}

KernelInstantiation zero_kv_blocks(const KeyParams& key) {
  namespace p = ks::zero_kv_blocks;
  InstantiationBuilder b(key, GpuKernel::zero_kv_blocks, "zero_kv_blocks.cuh",
                         "jw::kernels::zero_kv_blocks");
  b.int_type(p::n_blocks);
  b.int_class(p::n_blocks);
  b.int_type(p::n_segments);
  return b.result();
}

KernelInstantiation scatter_states(const KeyParams& key,
                                   const GpuTarget& target) {
  namespace p = ks::scatter_states;
  InstantiationBuilder b(key, GpuKernel::scatter_states, "scatter_states.cuh",
                         "jw::kernels::scatter_states");
  require_same_dtype(key, p::state, {p::src});
  const uint32_t element_bytes = dtype_bytes(key.dtype(p::state));
  const int64_t row_size = key.constexpr_int(p::ROW_SIZE, 0, int64_t{1} << 40);
  const int64_t block_size =
      key.constexpr_int(p::BLOCK_SIZE, 1, int64_t{1} << 20);
  const bool vectorized = key.aligned16(p::state) && key.aligned16(p::src) &&
                          is_div16(key, p::state_stride) &&
                          (row_size * element_bytes) % kVectorBytes == 0;
  const uint32_t per_access = vectorized ? kVectorBytes / element_bytes : 1;
  const uint32_t threads = threads_for(
      (static_cast<uint64_t>(block_size) + per_access - 1) / per_access,
      target.warp_size, kMaxBlockThreads);
  b.add(std::string(storage_type_spelling(key.dtype(p::state))),
        "state/src: storage of a " + std::to_string(element_bytes) +
            "-byte dtype");
  b.int_type(p::state_stride);
  b.int_class(p::state_stride);
  if (key.dtype(p::indices) != JW_DTYPE_INT32 &&
      key.dtype(p::indices) != JW_DTYPE_INT64) {
    key.fail(p::indices, "must be int32 or int64");
  }
  b.element(p::indices);
  b.int_type(p::num_rows);
  b.value(row_size, "ROW_SIZE");
  b.value(threads, "threads: BLOCK_SIZE " + std::to_string(block_size) + " / " +
                       std::to_string(per_access) +
                       " elements per access, whole warps");
  b.flag(vectorized, "16-byte rows: " + aligned_list(key, {p::state, p::src}) +
                         ", state_stride and ROW_SIZE bytes divisible by 16");
  b.result().vector_mode = vectorized ? VectorMode::always : VectorMode::never;
  b.result().fixed_block_threads = threads;
  return b.result();
}

// pack_seq and unpack_seq share everything but the pad value.
KernelInstantiation pack_or_unpack(const KeyParams& key,
                                   const GpuTarget& target, bool pack) {
  const PackUnpackParams p = pack_unpack_params(pack);
  const uint32_t in = p.input;
  const uint32_t out = p.output;
  InstantiationBuilder b(
      key, pack ? GpuKernel::pack_seq : GpuKernel::unpack_seq,
      "pack_unpack_seq.cuh",
      pack ? "jw::kernels::pack_seq" : "jw::kernels::unpack_seq");
  require_same_dtype(key, in, {out});
  const uint32_t element_bytes = dtype_bytes(key.dtype(in));
  const int64_t tile_t = key.constexpr_int(p.block_t, 1, 1 << 16);
  const int64_t tile_d = key.constexpr_int(p.block_d, 1, 1 << 16);
  const bool aligned = key.aligned16(in) && key.aligned16(out) &&
                       (tile_d * element_bytes) % kVectorBytes == 0;
  const uint32_t per_access = aligned ? kVectorBytes / element_bytes : 1;
  const uint32_t threads =
      threads_for(static_cast<uint64_t>(tile_t * tile_d) / per_access,
                  target.warp_size, 256);
  b.element(in);
  b.int_type(p.n);
  b.int_type(p.d);
  b.int_type(p.l_max);
  if (pack) b.float_type(ks::pack_seq::pad_value);
  b.value(tile_t, "BLOCK_T");
  b.value(tile_d, "BLOCK_D");
  b.value(threads, "threads: BLOCK_T * BLOCK_D / " +
                       std::to_string(per_access) +
                       " elements per access, whole warps, at most 256");
  b.flag(aligned, "16-byte tiles: " + aligned_list(key, {in, out}) +
                      ", BLOCK_D bytes divisible by 16 (D checked at run "
                      "time)");
  b.result().vector_mode =
      aligned ? VectorMode::if_sizes_allow : VectorMode::never;
  b.result().fixed_block_threads = threads;
  return b.result();
}

KernelInstantiation prepare_pos_seq_lens(const KeyParams& key) {
  namespace p = ks::prepare_pos_seq_lens;
  InstantiationBuilder b(key, GpuKernel::prepare_pos_seq_lens,
                         "prepare_pos_seq_lens.cuh",
                         "jw::kernels::prepare_pos_seq_lens");
  b.int_type(p::num_reqs);
  b.int_type(p::seq_lens_len);
  return b.result();
}

// The vector mode of a kernel whose rows are placed by `sizes` (integer
// parameters) in `tensors`.
VectorMode vector_mode_of(const KeyParams& key,
                          std::initializer_list<uint32_t> tensors,
                          std::initializer_list<uint32_t> sizes) {
  for (uint32_t t : tensors) {
    if (!key.aligned16(t)) return VectorMode::never;
  }
  for (uint32_t size : sizes) {
    if (!is_div16(key, size)) return VectorMode::if_sizes_allow;
  }
  return VectorMode::always;
}

KernelInstantiation rms_norm(const KeyParams& key) {
  namespace p = ks::rms_norm;
  InstantiationBuilder b(key, GpuKernel::rms_norm, "rms_norm.cuh",
                         "jw::kernels::rms_norm");
  require_same_dtype(key, p::x, {p::out, p::weight});
  b.element(p::x);
  b.int_type(p::x_stride);
  b.int_class(p::x_stride);
  b.float_type(p::eps);
  b.int_type(p::T);
  b.int_type(p::H);
  b.int_class(p::H);
  b.vector_mode(
      vector_mode_of(key, {p::out, p::x, p::weight}, {p::H, p::x_stride}),
      aligned_list(key, {p::out, p::x, p::weight}) +
          "; H and x_stride divisible by 16 proves the sizes");
  return b.result();
}

KernelInstantiation silu_and_mul(const KeyParams& key) {
  namespace p = ks::silu_and_mul;
  InstantiationBuilder b(key, GpuKernel::silu_and_mul, "silu_and_mul.cuh",
                         "jw::kernels::silu_and_mul");
  require_same_dtype(key, p::x, {p::out});
  b.element(p::x);
  b.int_type(p::T);
  b.int_type(p::H);
  b.int_class(p::H);
  b.vector_mode(vector_mode_of(key, {p::out, p::x}, {p::H}),
                aligned_list(key, {p::out, p::x}) +
                    "; H divisible by 16 proves the sizes");
  return b.result();
}

}  // namespace

std::string_view schema_name(GpuKernel kernel) {
  switch (kernel) {
    case GpuKernel::compute_slot_mapping: return ks::kComputeSlotMapping;
    case GpuKernel::expand: return ks::kExpand;
    case GpuKernel::batch_memcpy: return ks::kBatchMemcpy;
    case GpuKernel::zero_kv_blocks: return ks::kZeroKvBlocks;
    case GpuKernel::scatter_states: return ks::kScatterStates;
    case GpuKernel::pack_seq: return ks::kPackSeq;
    case GpuKernel::unpack_seq: return ks::kUnpackSeq;
    case GpuKernel::prepare_pos_seq_lens: return ks::kPreparePosSeqLens;
    case GpuKernel::rms_norm: return ks::kRmsNorm;
    case GpuKernel::silu_and_mul: return ks::kSiluAndMul;
  }
  return {};
}

std::optional<GpuKernel> find_gpu_kernel(std::string_view name) {
  for (GpuKernel kernel : kAllGpuKernels) {
    if (schema_name(kernel) == name) return kernel;
  }
  return std::nullopt;
}

std::string KernelInstantiation::name_expression() const {
  std::string text = function_template + "<";
  for (std::size_t i = 0; i < template_arguments.size(); ++i) {
    if (i != 0) text += ", ";
    text += template_arguments[i].spelling;
  }
  return text + ">";
}

std::string KernelInstantiation::explain() const {
  std::string text;
  for (const TemplateArgument& argument : template_arguments) {
    text += "  " + argument.spelling + "  <- " + argument.reason + "\n";
  }
  return text;
}

KernelInstantiation instantiate_kernel(const jw_compile_key_view& key,
                                       const GpuTarget& target) {
  const std::string_view name =
      key.kernel_name != nullptr ? key.kernel_name : "";
  const std::optional<GpuKernel> kernel = find_gpu_kernel(name);
  if (!kernel) {
    throw plugin::PluginError(JW_ERROR_NOT_FOUND,
                              "no GPU kernel '" + std::string(name) + "'");
  }
  const KeyParams params(key, name);
  switch (*kernel) {
    case GpuKernel::compute_slot_mapping: return compute_slot_mapping(params);
    case GpuKernel::expand: return expand(params);
    case GpuKernel::batch_memcpy: return batch_memcpy(params);
    case GpuKernel::zero_kv_blocks: return zero_kv_blocks(params);
    case GpuKernel::scatter_states: return scatter_states(params, target);
    case GpuKernel::pack_seq: return pack_or_unpack(params, target, true);
    case GpuKernel::unpack_seq: return pack_or_unpack(params, target, false);
    case GpuKernel::prepare_pos_seq_lens: return prepare_pos_seq_lens(params);
    case GpuKernel::rms_norm: return rms_norm(params);
    case GpuKernel::silu_and_mul: return silu_and_mul(params);
  }
  throw plugin::PluginError(JW_ERROR_INTERNAL, "unhandled GPU kernel");
}

std::string_view int_type_spelling(jw_int_type type) {
  switch (type) {
    case JW_INT_I32: return "jw::i32";
    case JW_INT_I64: return "jw::i64";
    case JW_INT_U64: return "jw::u64";
  }
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "invalid integer type " + std::to_string(static_cast<int>(type)));
}

std::string_view element_type_spelling(jw_dtype dtype) {
  switch (dtype) {
    case JW_DTYPE_FLOAT32: return "float";
    case JW_DTYPE_FLOAT16: return "jw::f16";
    case JW_DTYPE_BFLOAT16: return "jw::bf16";
    case JW_DTYPE_INT32: return "jw::i32";
    case JW_DTYPE_INT64: return "jw::i64";
    case JW_DTYPE_UINT8: return "jw::u8";
    default: break;
  }
  throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                            "no GPU element type for dtype " +
                                std::to_string(static_cast<int>(dtype)));
}

std::string_view storage_type_spelling(jw_dtype dtype) {
  switch (dtype_bytes(dtype)) {
    case 1: return "jw::u8";
    case 2: return "jw::u16";
    case 4: return "jw::u32";
    case 8: return "jw::u64";
    default: break;
  }
  throw plugin::PluginError(
      JW_ERROR_INVALID_ARGUMENT,
      "no storage type for dtype " + std::to_string(static_cast<int>(dtype)));
}

uint32_t dtype_bytes(jw_dtype dtype) {
  switch (dtype) {
    case JW_DTYPE_BOOL:
    case JW_DTYPE_INT8:
    case JW_DTYPE_UINT8: return 1;
    case JW_DTYPE_INT16:
    case JW_DTYPE_UINT16:
    case JW_DTYPE_FLOAT16:
    case JW_DTYPE_BFLOAT16: return 2;
    case JW_DTYPE_INT32:
    case JW_DTYPE_UINT32:
    case JW_DTYPE_FLOAT32: return 4;
    case JW_DTYPE_INT64:
    case JW_DTYPE_UINT64:
    case JW_DTYPE_FLOAT64: return 8;
    default: return 0;
  }
}

}  // namespace jitwarm::gpu
