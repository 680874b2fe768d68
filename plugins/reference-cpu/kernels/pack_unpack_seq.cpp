// pack_seq and unpack_seq — the references for vllm.v1.attention.ops.pack_seq
// and vllm.v1.attention.ops.unpack_seq (docs/kernels.md, 6. pack_seq and
// 7. unpack_seq), one file because each is the other's inverse and they share
// the rules on `lengths`.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace pack = kernel_set::pack_seq;
namespace unpack = kernel_set::unpack_seq;

// Checks 0 <= lengths[b] <= L_max for every b and sum(lengths) <= N; both
// kernels index rows of the [N, D] side by the running sum.
void check_lengths(const KernelArgs& args, const HostTensor& lengths,
                   int64_t max_length, int64_t num_rows) {
  const int32_t* values = lengths.as<const int32_t>();
  int64_t total = 0;
  for (int64_t b = 0; b < lengths.dim(0); ++b) {
    args.require(values[b] >= 0 && values[b] <= max_length, "lengths[", b,
                 "] = ", values[b], " must be in [0, L_max = ", max_length,
                 "]");
    total += values[b];
  }
  args.require(total <= num_rows, "the lengths add up to ", total,
               ", more than N = ", num_rows, " rows");
}

// The padding element. A GPU receives pad_value as float32 (the schema's
// float type) and converts it to the element type, so the reference does
// the same two steps; for uint8 the value must be an exact byte.
template <typename T>
T padding_element(const KernelArgs& args, double pad_value) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    args.require(pad_value >= 0 && pad_value <= 255 &&
                     pad_value == std::floor(pad_value),
                 "pad_value = ", pad_value,
                 " is not an exact byte (an integer in [0, 255]), as uint8 "
                 "x needs");
    return static_cast<uint8_t>(pad_value);
  } else {
    return store_from_float<T>(static_cast<float>(pad_value));
  }
}

void check_dims(const KernelArgs& args, int64_t num_rows, int64_t width,
                int64_t max_length) {
  args.require(num_rows >= 0, "N = ", num_rows, " is negative");
  args.require(width >= 0, "D = ", width, " is negative");
  args.require(max_length >= 0, "L_max = ", max_length, " is negative");
}

template <typename T>
void run_pack(const KernelArgs& args) {
  constexpr_at_least(args, pack::BLOCK_T, 1);
  constexpr_at_least(args, pack::BLOCK_D, 1);
  const HostTensor x = args.typed_tensor<T>(pack::x);
  const HostTensor lengths = args.tensor(pack::lengths);
  const HostTensor out = args.typed_tensor<T>(pack::out);
  const int64_t num_rows = args.integer(pack::N);
  const int64_t width = args.integer(pack::D);
  const int64_t max_length = args.integer(pack::L_max);
  check_dims(args, num_rows, width, max_length);
  const int64_t batch = lengths.dim(0);
  args.require(x.dim(0) >= num_rows, "x has ", x.dim(0),
               " rows, fewer than N = ", num_rows);
  args.require(x.dim(1) == width, "x has rows of ", x.dim(1),
               " elements, but D = ", width);
  args.require(out.dim(0) >= batch, "out has ", out.dim(0),
               " sequences, fewer than the ", batch, " lengths");
  args.require(out.dim(1) == max_length && out.dim(2) == width,
               "out has shape [", out.dim(0), ", ", out.dim(1), ", ",
               out.dim(2), "], but L_max = ", max_length, " and D = ", width,
               " need [B, ", max_length, ", ", width, "]");
  check_lengths(args, lengths, max_length, num_rows);
  const T pad = padding_element<T>(args, args.floating(pack::pad_value));
  if (width == 0) return;  // rows of no elements: nothing to move or pad

  const int32_t* sequence_lengths = lengths.as<const int32_t>();
  const T* rows = x.as<const T>();
  T* packed = out.as<T>();
  int64_t start = 0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < max_length; ++t) {
      T* destination = packed + (b * max_length + t) * width;
      if (t < sequence_lengths[b]) {
        std::memcpy(destination, rows + (start + t) * width,
                    static_cast<std::size_t>(width) * sizeof(T));
      } else {
        std::fill(destination, destination + width, pad);
      }
    }
    start += sequence_lengths[b];
  }
}

template <typename T>
void run_unpack(const KernelArgs& args) {
  constexpr_at_least(args, unpack::BLOCK_T, 1);
  constexpr_at_least(args, unpack::BLOCK_D, 1);
  const HostTensor packed = args.typed_tensor<T>(unpack::packed);
  const HostTensor lengths = args.tensor(unpack::lengths);
  const HostTensor out = args.typed_tensor<T>(unpack::out);
  const int64_t num_rows = args.integer(unpack::N);
  const int64_t width = args.integer(unpack::D);
  const int64_t max_length = args.integer(unpack::L_max);
  check_dims(args, num_rows, width, max_length);
  const int64_t batch = lengths.dim(0);
  args.require(packed.dim(0) >= batch, "packed has ", packed.dim(0),
               " sequences, fewer than the ", batch, " lengths");
  args.require(packed.dim(1) == max_length && packed.dim(2) == width,
               "packed has shape [", packed.dim(0), ", ", packed.dim(1), ", ",
               packed.dim(2), "], but L_max = ", max_length, " and D = ", width,
               " need [B, ", max_length, ", ", width, "]");
  args.require(out.dim(0) >= num_rows, "out has ", out.dim(0),
               " rows, fewer than N = ", num_rows);
  args.require(out.dim(1) == width, "out has rows of ", out.dim(1),
               " elements, but D = ", width);
  check_lengths(args, lengths, max_length, num_rows);
  if (width == 0) return;  // rows of no elements: nothing to move

  const int32_t* sequence_lengths = lengths.as<const int32_t>();
  const T* source = packed.as<const T>();
  T* rows = out.as<T>();
  int64_t start = 0;
  for (int64_t b = 0; b < batch; ++b) {
    // Padding rows (t >= lengths[b]) are never read.
    for (int64_t t = 0; t < sequence_lengths[b]; ++t) {
      std::memcpy(rows + (start + t) * width,
                  source + (b * max_length + t) * width,
                  static_cast<std::size_t>(width) * sizeof(T));
    }
    start += sequence_lengths[b];
  }
}

const Instantiation kPackInstantiations[] = {
    {"pack_seq<fp32>", &run_pack<float>},
    {"pack_seq<fp16>", &run_pack<numeric::Float16>},
    {"pack_seq<bf16>", &run_pack<numeric::BFloat16>},
    {"pack_seq<u8>", &run_pack<uint8_t>},
};
const Instantiation kUnpackInstantiations[] = {
    {"unpack_seq<fp32>", &run_unpack<float>},
    {"unpack_seq<fp16>", &run_unpack<numeric::Float16>},
    {"unpack_seq<bf16>", &run_unpack<numeric::BFloat16>},
    {"unpack_seq<u8>", &run_unpack<uint8_t>},
};

// The dtypes of both tables, in their order.
const jw_dtype kDtypes[] = {JW_DTYPE_FLOAT32, JW_DTYPE_FLOAT16,
                            JW_DTYPE_BFLOAT16, JW_DTYPE_UINT8};

const Instantiation& select_pack(const ParamReader& reader) {
  constexpr_at_least(reader, pack::BLOCK_T, 1);
  constexpr_at_least(reader, pack::BLOCK_D, 1);
  return select_by_dtype(reader, pack::x, kDtypes, kPackInstantiations);
}

const Instantiation& select_unpack(const ParamReader& reader) {
  constexpr_at_least(reader, unpack::BLOCK_T, 1);
  constexpr_at_least(reader, unpack::BLOCK_D, 1);
  return select_by_dtype(reader, unpack::packed, kDtypes,
                         kUnpackInstantiations);
}

}  // namespace

const KernelDefinition& pack_seq_definition() {
  static const KernelDefinition definition{
      kernel_set::kPackSeq, &select_pack,
      "the dtype of x (out shares it); pad_value is converted at launch",
      kPackInstantiations};
  return definition;
}

const KernelDefinition& unpack_seq_definition() {
  static const KernelDefinition definition{
      kernel_set::kUnpackSeq, &select_unpack,
      "the dtype of packed (out shares it)", kUnpackInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
