// dtypes, storage-free tensor metadata and argument values.
#include <jitwarm/plugin/dtype.hpp>

#include "errors.hpp"

namespace jitwarm {
namespace {

// The dtype table is the plugin SDK's (jitwarm/plugin/dtype.hpp): the core
// and every plugin name and size dtypes from the one table.
using plugin::dtype_info;

void check_rank(std::size_t rank) {
  if (rank > JW_MAX_RANK) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "rank {} exceeds the maximum {}",
                 rank, JW_MAX_RANK);
  }
}

}  // namespace

std::size_t dtype_size(jw_dtype dtype) {
  return dtype_info(dtype).size;
}

std::string_view dtype_name(jw_dtype dtype) {
  return dtype_info(dtype).name;
}

std::string_view dtype_short_name(jw_dtype dtype) {
  return dtype_info(dtype).short_name;
}

std::optional<jw_dtype> parse_dtype(std::string_view text) {
  for (int d = JW_DTYPE_BOOL; d < JW_DTYPE_COUNT; ++d) {
    const plugin::DtypeInfo info = dtype_info(static_cast<jw_dtype>(d));
    if (text == info.name || text == info.short_name) {
      return static_cast<jw_dtype>(d);
    }
  }
  if (text == "half") return JW_DTYPE_FLOAT16;
  if (text == "float") return JW_DTYPE_FLOAT32;
  if (text == "double") return JW_DTYPE_FLOAT64;
  return std::nullopt;
}

bool is_floating_dtype(jw_dtype dtype) {
  return dtype == JW_DTYPE_FLOAT16 || dtype == JW_DTYPE_BFLOAT16 ||
         dtype == JW_DTYPE_FLOAT32 || dtype == JW_DTYPE_FLOAT64;
}

bool is_integer_dtype(jw_dtype dtype) {
  return dtype_size(dtype) != 0 && dtype != JW_DTYPE_BOOL &&
         !is_floating_dtype(dtype);
}

jw_tensor_meta make_tensor_meta(jw_dtype dtype, std::span<const int64_t> shape,
                                bool aligned_16) {
  check_rank(shape.size());
  jw_tensor_meta meta{};
  meta.struct_size = sizeof(jw_tensor_meta);
  meta.dtype = dtype;
  meta.rank = static_cast<uint32_t>(shape.size());
  meta.flags = aligned_16 ? static_cast<uint32_t>(JW_TENSOR_ALIGNED_16) : 0u;
  for (std::size_t i = 0; i < shape.size(); ++i) meta.shape[i] = shape[i];
  return meta;
}

jw_tensor_meta make_tensor_meta(jw_dtype dtype, std::span<const int64_t> shape,
                                std::span<const int64_t> strides,
                                bool aligned_16) {
  if (strides.size() != shape.size()) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "a tensor of rank {} needs {} strides, got {}", shape.size(),
                 shape.size(), strides.size());
  }
  jw_tensor_meta meta = make_tensor_meta(dtype, shape, aligned_16);
  meta.flags |= JW_TENSOR_HAS_STRIDES;
  for (std::size_t i = 0; i < strides.size(); ++i) meta.strides[i] = strides[i];
  return meta;
}

jw_tensor make_tensor(void* data, jw_dtype dtype,
                      std::span<const int64_t> shape, int32_t device) {
  jw_tensor t{};
  t.struct_size = sizeof(jw_tensor);
  t.meta = make_tensor_meta(dtype, shape, false);
  t.data = data;
  t.device_index = device;
  return t;
}

jw_tensor make_tensor(void* data, jw_dtype dtype,
                      std::span<const int64_t> shape,
                      std::span<const int64_t> strides, int32_t device) {
  jw_tensor t{};
  t.struct_size = sizeof(jw_tensor);
  t.meta = make_tensor_meta(dtype, shape, strides, false);
  t.data = data;
  t.device_index = device;
  return t;
}

std::vector<int64_t> effective_strides(const jw_tensor_meta& meta) {
  const std::size_t rank = std::min<std::size_t>(meta.rank, JW_MAX_RANK);
  std::vector<int64_t> strides(rank);
  if ((meta.flags & JW_TENSOR_HAS_STRIDES) != 0) {
    for (std::size_t i = 0; i < rank; ++i) strides[i] = meta.strides[i];
    return strides;
  }
  int64_t running = 1;
  for (std::size_t i = rank; i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(meta.shape[i], 1);
  }
  return strides;
}

int64_t element_count(const jw_tensor_meta& meta) {
  int64_t n = 1;
  for (uint32_t i = 0; i < meta.rank && i < JW_MAX_RANK; ++i)
    n *= meta.shape[i];
  return n;
}

bool is_compact_row_major(const jw_tensor_meta& meta) {
  if ((meta.flags & JW_TENSOR_HAS_STRIDES) == 0) return true;
  int64_t expected = 1;
  for (std::size_t i = meta.rank; i-- > 0;) {
    // A dimension of extent 1 may have any stride (as in PyTorch).
    if (meta.shape[i] != 1 && meta.strides[i] != expected) return false;
    expected *= std::max<int64_t>(meta.shape[i], 1);
  }
  return true;
}

jw_scalar scalar_int(int64_t value) {
  jw_scalar s{JW_SCALAR_INT, {0}};
  s.value.i = value;
  return s;
}
jw_scalar scalar_uint(uint64_t value) {
  jw_scalar s{JW_SCALAR_UINT, {0}};
  s.value.u = value;
  return s;
}
jw_scalar scalar_float(double value) {
  jw_scalar s{JW_SCALAR_FLOAT, {0}};
  s.value.f = value;
  return s;
}
jw_scalar scalar_bool(bool value) {
  jw_scalar s{JW_SCALAR_BOOL, {0}};
  s.value.i = value ? 1 : 0;
  return s;
}

jw_arg_value arg(const jw_tensor& tensor) {
  jw_arg_value a{};
  a.struct_size = sizeof(jw_arg_value);
  a.kind = JW_VALUE_TENSOR;
  a.value.tensor = &tensor;
  return a;
}
jw_arg_value arg(const jw_scalar& scalar) {
  jw_arg_value a{};
  a.struct_size = sizeof(jw_arg_value);
  a.kind = JW_VALUE_SCALAR;
  a.value.scalar = scalar;
  return a;
}
jw_arg_value warmup_arg(const jw_tensor_meta& meta) {
  jw_arg_value a{};
  a.struct_size = sizeof(jw_arg_value);
  a.kind = JW_VALUE_WARMUP_TENSOR;
  a.value.meta = &meta;
  return a;
}
jw_arg_value arg_int(int64_t value) {
  return arg(scalar_int(value));
}
jw_arg_value arg_uint(uint64_t value) {
  return arg(scalar_uint(value));
}
jw_arg_value arg_float(double value) {
  return arg(scalar_float(value));
}
jw_arg_value arg_bool(bool value) {
  return arg(scalar_bool(value));
}

}  // namespace jitwarm

extern "C" JITWARM_EXPORT const char* jw_dtype_name(jw_dtype dtype) {
  return jitwarm::dtype_name(dtype).data();
}
