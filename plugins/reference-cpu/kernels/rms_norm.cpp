// rms_norm — the reference for vllm.model_executor.layers.layernorm.rms_norm
// (docs/kernels.md, 9. rms_norm): out = x * rsqrt(mean(x^2) + eps) * weight per
// row.
//
// As the oracle it accumulates the sum of squares in double (so its own
// rounding does not eat into the backends' tolerance), then finishes in
// float32 like the kernels do and rounds once to the output dtype.
#include <cmath>
#include <cstdint>

#include "kernel_definitions.hpp"
#include "kernel_set.hpp"

namespace jitwarm::reference_cpu {
namespace {

namespace p = kernel_set::rms_norm;

template <typename T>
void run(const KernelArgs& args) {
  const HostTensor out = args.typed_tensor<T>(p::out);
  const HostTensor x = args.typed_tensor<T>(p::x);
  const HostTensor weight = args.typed_tensor<T>(p::weight);
  const int64_t x_stride = args.integer(p::x_stride);
  const float eps = static_cast<float>(args.floating(p::eps));
  const int64_t rows = args.integer(p::T);
  const int64_t width = args.integer(p::H);

  args.require(rows >= 0, "T = ", rows, " is negative");
  args.require(width >= 0, "H = ", width, " is negative");
  args.require(x.dim(0) >= rows && x.dim(1) == width, "x has shape [", x.dim(0),
               ", ", x.dim(1), "], but T = ", rows, " and H = ", width,
               " need [>= ", rows, ", ", width, "]");
  args.require(out.dim(0) >= rows && out.dim(1) == width, "out has shape [",
               out.dim(0), ", ", out.dim(1), "], but T = ", rows,
               " and H = ", width, " need [>= ", rows, ", ", width, "]");
  args.require(weight.dim(0) >= width, "weight has ", weight.dim(0),
               " elements, fewer than H = ", width);
  require_row_stride_matches(args, x, x_stride, p::x_stride);
  if (width == 0) return;  // empty rows: nothing to normalize or write

  const T* input = x.as<const T>();
  const T* scale = weight.as<const T>();
  T* output = out.as<T>();
  for (int64_t t = 0; t < rows; ++t) {
    const T* row = input + t * x_stride;
    double sum_of_squares = 0;
    for (int64_t h = 0; h < width; ++h) {
      const double value = load_as_float(row[h]);
      sum_of_squares += value * value;
    }
    const float mean_square =
        static_cast<float>(sum_of_squares / static_cast<double>(width));
    const float inverse_rms = 1.0f / std::sqrt(mean_square + eps);
    // out may alias x: row t is fully read above before it is written.
    T* out_row = output + t * width;
    for (int64_t h = 0; h < width; ++h) {
      out_row[h] = store_from_float<T>(load_as_float(row[h]) * inverse_rms *
                                       load_as_float(scale[h]));
    }
  }
}

const Instantiation kInstantiations[] = {
    {"rms_norm<fp32>", &run<float>},
    {"rms_norm<fp16>", &run<numeric::Float16>},
    {"rms_norm<bf16>", &run<numeric::BFloat16>},
};

const jw_dtype kDtypes[] = {JW_DTYPE_FLOAT32, JW_DTYPE_FLOAT16,
                            JW_DTYPE_BFLOAT16};

const Instantiation& select(const ParamReader& reader) {
  return select_by_dtype(reader, p::x, kDtypes, kInstantiations);
}

}  // namespace

const KernelDefinition& rms_norm_definition() {
  static const KernelDefinition definition{
      kernel_set::kRmsNorm, &select, "the dtype of x (out and weight share it)",
      kInstantiations};
  return definition;
}

}  // namespace jitwarm::reference_cpu
