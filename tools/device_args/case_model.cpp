// case_model.cpp — the case builder, the random source and the dtype
// encoders (see case_model.hpp).
#include "case_model.hpp"

#include <jitwarm/jitwarm.hpp>
#include <jitwarm/plugin/float16.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace jitwarm::device_args {

std::size_t Buffer::element_size() const {
  return dtype_size(dtype);
}

int64_t Buffer::element_count() const {
  return static_cast<int64_t>(bytes.size() / element_size());
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t Rng::uniform_int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == std::numeric_limits<uint64_t>::max()) {
    return static_cast<int64_t>(next());
  }
  // The modulo bias is below 2^-32 for every span a case uses.
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + next() % (span + 1));
}

double Rng::uniform_real(double lo, double hi) {
  const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * unit;
}

std::vector<int64_t> Rng::permutation(int64_t n) {
  std::vector<int64_t> values(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = i;
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(values[static_cast<std::size_t>(i)],
              values[static_cast<std::size_t>(uniform_int(0, i))]);
  }
  return values;
}

uint64_t case_seed(uint64_t run_seed, std::string_view kernel,
                   std::string_view case_name) {
  // FNV-1a over "kernel/case", then mixed with the run's seed.
  uint64_t hash = 0xCBF29CE484222325ull;
  const auto mix = [&](std::string_view text) {
    for (const char c : text) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001B3ull;
    }
  };
  mix(kernel);
  mix("/");
  mix(case_name);
  Rng mixer(hash ^ run_seed);
  return mixer.next();
}

namespace {

template <typename T>
void append_value(std::vector<unsigned char>& out, T value) {
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.insert(out.end(), raw, raw + sizeof(T));
}

}  // namespace

void append_float(std::vector<unsigned char>& out, jw_dtype dtype,
                  double value) {
  switch (dtype) {
    case JW_DTYPE_FLOAT32: append_value(out, static_cast<float>(value)); break;
    case JW_DTYPE_FLOAT64: append_value(out, value); break;
    case JW_DTYPE_FLOAT16:
      append_value(out, numeric::float16_bits_from_double(value));
      break;
    case JW_DTYPE_BFLOAT16:
      append_value(out, numeric::bfloat16_bits_from_double(value));
      break;
    default:
      throw std::logic_error("append_float: " + std::string(dtype_name(dtype)) +
                             " is not a float dtype");
  }
}

std::vector<unsigned char> random_floats(Rng& rng, jw_dtype dtype,
                                         int64_t count, double lo, double hi) {
  constexpr double kSmallest = 0x1.0p-14;  // float16's smallest normal
  std::vector<unsigned char> out;
  out.reserve(static_cast<std::size_t>(count) * dtype_size(dtype));
  for (int64_t i = 0; i < count; ++i) {
    double value = rng.uniform_real(lo, hi);
    if (std::fabs(value) < kSmallest)
      value = value < 0 ? -kSmallest : kSmallest;
    append_float(out, dtype, value);
  }
  return out;
}

std::vector<unsigned char> random_bytes(Rng& rng, int64_t count) {
  std::vector<unsigned char> out(static_cast<std::size_t>(count));
  for (auto& byte : out) byte = static_cast<unsigned char>(rng.next() >> 56);
  return out;
}

std::vector<unsigned char> random_values(Rng& rng, jw_dtype dtype,
                                         int64_t count) {
  if (is_floating_dtype(dtype)) {
    return random_floats(rng, dtype, count, -1000.0, 1000.0);
  }
  if (dtype == JW_DTYPE_BOOL) {
    std::vector<unsigned char> out(static_cast<std::size_t>(count));
    for (auto& byte : out) byte = static_cast<unsigned char>(rng.next() >> 63);
    return out;
  }
  // Every bit pattern of an integer dtype is a valid value.
  return random_bytes(rng, count * static_cast<int64_t>(dtype_size(dtype)));
}

int64_t storage_elements(std::span<const int64_t> shape,
                         std::span<const int64_t> strides) {
  int64_t count = 1;
  for (const int64_t extent : shape) {
    if (extent == 0) return 0;
    count *= extent;
  }
  if (strides.empty()) return count;
  int64_t last = 0;
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    last += (shape[axis] - 1) * strides[axis];
  }
  return last + 1;
}

CaseBuilder::CaseBuilder(const jw_kernel_schema& schema) : schema_(schema) {
  case_.kernel = schema.name;
  case_.args.resize(schema_.num_params);
}

std::size_t CaseBuilder::index_of(std::string_view param) const {
  for (uint32_t i = 0; i < schema_.num_params; ++i) {
    if (param == schema_.params[i].name) return i;
  }
  throw std::logic_error("CaseBuilder: " + case_.kernel + " has no parameter " +
                         std::string(param));
}

std::size_t CaseBuilder::tensor(std::string_view param, jw_dtype dtype,
                                std::vector<int64_t> shape,
                                std::vector<unsigned char> bytes,
                                TensorOptions options) {
  const std::size_t index = index_of(param);
  const int64_t needed = storage_elements(shape, options.strides);
  if (bytes.size() != static_cast<std::size_t>(needed) * dtype_size(dtype)) {
    throw std::logic_error(
        "CaseBuilder: " + case_.kernel + "." + std::string(param) + " has " +
        std::to_string(bytes.size()) + " bytes; its shape needs " +
        std::to_string(needed * static_cast<int64_t>(dtype_size(dtype))));
  }
  Buffer storage;
  storage.name = std::string(param);
  storage.dtype = dtype;
  storage.bytes = std::move(bytes);
  storage.misaligned = options.misaligned;
  storage.comparison = options.comparison;
  if (shape.size() >= 2 && !options.strides.empty()) {
    storage.layout = {shape[0], options.strides[0]};
  } else if (shape.size() >= 2) {
    int64_t row = 1;
    for (std::size_t axis = 1; axis < shape.size(); ++axis) row *= shape[axis];
    storage.layout = {shape[0], row};
  }
  const std::size_t buffer_index = buffer(std::move(storage));
  case_.args[index] = TensorArg{buffer_index, dtype, std::move(shape),
                                std::move(options.strides)};
  return buffer_index;
}

std::size_t CaseBuilder::buffer(Buffer storage) {
  case_.buffers.push_back(std::move(storage));
  return case_.buffers.size() - 1;
}

void CaseBuilder::integer(std::string_view param, int64_t value) {
  case_.args[index_of(param)] = scalar_int(value);
}

void CaseBuilder::floating(std::string_view param, double value) {
  case_.args[index_of(param)] = scalar_float(value);
}

Case CaseBuilder::finish() {
  std::string missing;
  for (uint32_t i = 0; i < schema_.num_params; ++i) {
    const jw_param_desc& param = schema_.params[i];
    const bool is_tensor = param.kind == JW_PARAM_TENSOR;
    const CaseArg& arg = case_.args[i];
    const bool given = is_tensor ? std::holds_alternative<TensorArg>(arg)
                                 : std::holds_alternative<jw_scalar>(arg);
    if (!given)
      missing += (missing.empty() ? "" : ", ") + std::string(param.name);
  }
  if (!missing.empty()) {
    throw std::logic_error("CaseBuilder: " + case_.kernel +
                           " case lacks a value for: " + missing);
  }
  return std::move(case_);
}

}  // namespace jitwarm::device_args
