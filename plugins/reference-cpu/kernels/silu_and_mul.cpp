// silu_and_mul — the reference for
// vllm.model_executor.layers.activation.silu_and_mul (docs/kernels.md,
// 10. silu_and_mul): out[t, h] = silu(x[t, h]) * x[t, H + h], computed in
// float32 and rounded once to the output dtype.
#include <cmath>
#include <cstdint>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::silu_and_mul;

template <typename T>
void run(const KernelArgs& args) {
  const HostTensor out = args.typed_tensor<T>(p::out);
  const HostTensor x = args.typed_tensor<T>(p::x);
  const int64_t rows = args.integer(p::T);
  const int64_t width = args.integer(p::H);

  args.require(rows >= 0, "T = ", rows, " is negative");
  args.require(width >= 0, "H = ", width, " is negative");
  const int64_t input_width = checked_mul(args, width, 2, "2 * H");
  args.require(x.dim(0) >= rows && x.dim(1) == input_width, "x has shape [",
               x.dim(0), ", ", x.dim(1), "], but T = ", rows,
               " and H = ", width, " need [>= ", rows, ", ", input_width, "]");
  args.require(out.dim(0) >= rows && out.dim(1) == width, "out has shape [",
               out.dim(0), ", ", out.dim(1), "], but T = ", rows,
               " and H = ", width, " need [>= ", rows, ", ", width, "]");

  const T* input = x.as<const T>();
  T* output = out.as<T>();
  for (int64_t t = 0; t < rows; ++t) {
    const T* gate = input + t * input_width;
    const T* up = gate + width;
    T* out_row = output + t * width;
    for (int64_t h = 0; h < width; ++h) {
      const float v = load_as_float(gate[h]);
      // For very negative v, exp(-v) is +inf and silu is -0: the limit.
      const float silu = v / (1.0f + std::exp(-v));
      out_row[h] = store_from_float<T>(silu * load_as_float(up[h]));
    }
  }
}

const Instantiation kInstantiations[] = {
    {"silu_and_mul<fp32>", &run<float>},
    {"silu_and_mul<fp16>", &run<numeric::Float16>},
    {"silu_and_mul<bf16>", &run<numeric::BFloat16>},
};

const jw_dtype kDtypes[] = {JW_DTYPE_FLOAT32, JW_DTYPE_FLOAT16,
                            JW_DTYPE_BFLOAT16};

const Instantiation& select(const ParamReader& reader) {
  return select_by_dtype(reader, p::x, kDtypes, kInstantiations);
}

}  // namespace

const KernelDefinition& silu_and_mul_definition() {
  static const KernelDefinition definition{kernel_set::kSiluAndMul, &select,
                                           "the dtype of x (out shares it)",
                                           kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
