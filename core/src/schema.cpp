// KernelSchema: an owning, validated copy of a jw_kernel_schema.
#include <jitwarm/plugin/names.hpp>

#include "errors.hpp"

#include <cstring>
#include <set>

namespace jitwarm {
namespace {

bool valid_kernel_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) return false;
  }
  return name.find("..") == std::string_view::npos;
}

// Parameter names become manifest keys and part of key texts: C
// identifiers only.
bool valid_param_name(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9'))
    return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Every dtype bit jw_dtype defines (bit 0 is JW_DTYPE_INVALID).
constexpr jw_dtype_set kKnownDtypes =
    ((jw_dtype_set{1} << JW_DTYPE_COUNT) - 1) & ~JW_DTYPE_BIT(JW_DTYPE_INVALID);

constexpr uint32_t kKnownFlags =
    JW_PARAM_DO_NOT_SPECIALIZE | JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT |
    JW_PARAM_OUTPUT | JW_PARAM_HAS_DEFAULT | JW_PARAM_FLOAT64 |
    JW_PARAM_CONTIGUOUS | JW_PARAM_INNER_CONTIGUOUS |
    JW_PARAM_SPECIALIZE_STRIDES;
// Flags that describe a tensor's layout or use; meaningless on a scalar.
constexpr uint32_t kTensorOnlyFlags = JW_PARAM_DO_NOT_SPECIALIZE_ON_ALIGNMENT |
                                      JW_PARAM_OUTPUT | JW_PARAM_CONTIGUOUS |
                                      JW_PARAM_INNER_CONTIGUOUS |
                                      JW_PARAM_SPECIALIZE_STRIDES;

std::string_view kind_name(jw_param_kind kind) {
  return plugin::param_kind_name(kind).value_or("unknown");
}

// `value_kind` is a checked jw_scalar_kind (JW_SCALAR_NONE..BOOL).
std::string_view scalar_kind_name(int value_kind) {
  return plugin::scalar_kind_name(static_cast<jw_scalar_kind>(value_kind))
      .value_or("unknown");
}

// Whether a default of scalar kind `value_kind` is a valid argument for a
// parameter of kind `kind` (the rules derive_key applies to every call).
bool default_fits(jw_param_kind kind, int value_kind) {
  switch (kind) {
    case JW_PARAM_INT:
      return value_kind == JW_SCALAR_INT || value_kind == JW_SCALAR_UINT;
    case JW_PARAM_FLOAT:
    case JW_PARAM_SCALAR:
      return value_kind == JW_SCALAR_INT || value_kind == JW_SCALAR_UINT ||
             value_kind == JW_SCALAR_FLOAT;
    case JW_PARAM_CONSTEXPR:
      return value_kind >= JW_SCALAR_INT && value_kind <= JW_SCALAR_BOOL;
    case JW_PARAM_TENSOR: return false;
  }
  return false;
}

}  // namespace

KernelSchema KernelSchema::from_c(const jw_kernel_schema& c,
                                  std::string origin) {
  if (c.struct_size < offsetof(jw_kernel_schema, launch_rule)) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "kernel schema from {}: struct_size {} is too small", origin,
                 c.struct_size);
  }
  if (c.name == nullptr || !valid_kernel_name(c.name)) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "kernel schema from {}: name '{}' is not a dotted identifier",
                 origin, c.name != nullptr ? c.name : "(null)");
  }
  KernelSchema s;
  s.name_ = c.name;
  s.summary_ = c.summary != nullptr ? c.summary : "";
  if (c.struct_size >=
          offsetof(jw_kernel_schema, launch_rule) + sizeof(c.launch_rule) &&
      c.launch_rule != nullptr) {
    s.launch_rule_ = c.launch_rule;
  }
  s.origin_ = std::move(origin);
  if (c.num_params > 0 && c.params == nullptr) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "kernel schema {}: params is null",
                 s.name_);
  }
  std::set<std::string, std::less<>> seen;
  for (uint32_t i = 0; i < c.num_params; ++i) {
    const jw_param_desc& p = c.params[i];
    if (p.struct_size < offsetof(jw_param_desc, default_value)) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter {} has struct_size {}", s.name_,
                   i, p.struct_size);
    }
    if (p.name == nullptr || *p.name == '\0') {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter {} has no name", s.name_, i);
    }
    if (!valid_param_name(p.name)) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter {} is named '{}'; names are "
                   "identifiers ([A-Za-z_][A-Za-z0-9_]*)",
                   s.name_, i, p.name);
    }
    if (!seen.insert(p.name).second) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter name '{}' appears twice",
                   s.name_, p.name);
    }
    const int kind = detail::raw_enum(p.kind);
    if (kind < JW_PARAM_TENSOR || kind > JW_PARAM_SCALAR) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' has unknown kind {}",
                   s.name_, p.name, kind);
    }
    ParamDesc d;
    d.name = p.name;
    d.kind = p.kind;
    d.flags = p.flags;
    d.allowed_dtypes = p.allowed_dtypes;
    d.rank = p.rank;
    const bool tensor = d.kind == JW_PARAM_TENSOR;
    if ((d.flags & ~kKnownFlags) != 0) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' has unknown flag bits "
                   "{:#x}",
                   s.name_, p.name, d.flags & ~kKnownFlags);
    }
    if (!tensor && (d.flags & kTensorOnlyFlags) != 0) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' is not a tensor but has "
                   "tensor flags {:#x}",
                   s.name_, p.name, d.flags & kTensorOnlyFlags);
    }
    // Bit 0 (JW_DTYPE_INVALID) and bits past the last dtype name no dtype:
    // a set made only of them would leave warmup nothing to warm.
    if ((d.allowed_dtypes & ~kKnownDtypes) != 0) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' allows dtype bits {:#x} "
                   "that name no dtype (allowed_dtypes {:#x}; known dtypes "
                   "are bits 1 to {})",
                   s.name_, p.name, d.allowed_dtypes & ~kKnownDtypes,
                   d.allowed_dtypes, JW_DTYPE_COUNT - 1);
    }
    if (!tensor) {
      d.allowed_dtypes = 0;  // only tensors have a dtype
      d.rank = -1;
    }
    if (tensor && (d.rank < -1 || d.rank > JW_MAX_RANK)) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' has rank {}", s.name_,
                   p.name, d.rank);
    }
    if (d.has_flag(JW_PARAM_HAS_DEFAULT)) {
      if (p.struct_size <
          offsetof(jw_param_desc, default_value) + sizeof(jw_scalar)) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "kernel schema {}: parameter '{}' says it has a default "
                     "but its struct_size {} ends before default_value",
                     s.name_, p.name, p.struct_size);
      }
      const int value_kind = detail::raw_enum(p.default_value.kind);
      if (value_kind == JW_SCALAR_NONE) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "kernel schema {}: parameter '{}' says it has a default "
                     "but gives none",
                     s.name_, p.name);
      }
      if (value_kind < JW_SCALAR_NONE || value_kind > JW_SCALAR_BOOL) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "kernel schema {}: parameter '{}' has a default of "
                     "unknown scalar kind {}",
                     s.name_, p.name, value_kind);
      }
      if (!default_fits(d.kind, value_kind)) {
        detail::fail(JW_ERROR_INVALID_ARGUMENT,
                     "kernel schema {}: parameter '{}' cannot take its own "
                     "default (a default of kind {} for a parameter of kind "
                     "{})",
                     s.name_, p.name, scalar_kind_name(value_kind),
                     kind_name(d.kind));
      }
      d.default_value = p.default_value;
    }
    // Without HAS_DEFAULT default_value is never read: d keeps none.
    if (p.struct_size >=
            offsetof(jw_param_desc, same_dtype_as) + sizeof(const char*) &&
        p.same_dtype_as != nullptr) {
      d.same_dtype_as = p.same_dtype_as;
    }
    if (!d.same_dtype_as.empty() && !tensor && d.kind != JW_PARAM_SCALAR) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' follows the dtype of "
                   "'{}', but only tensors and scalars follow a dtype",
                   s.name_, p.name, d.same_dtype_as);
    }
    s.params_.push_back(std::move(d));
  }
  s.same_dtype_index_.assign(s.params_.size(), -1);
  for (std::size_t i = 0; i < s.params_.size(); ++i) {
    const ParamDesc& d = s.params_[i];
    if (d.same_dtype_as.empty()) continue;
    const int other = s.index_of(d.same_dtype_as);
    s.same_dtype_index_[i] = other;
    s.dtype_followers_.push_back(static_cast<uint32_t>(i));
    if (other < 0 || s.params_[other].kind != JW_PARAM_TENSOR ||
        d.same_dtype_as == d.name) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' follows the dtype of "
                   "'{}', which is not another tensor parameter",
                   s.name_, d.name, d.same_dtype_as);
    }
    // One step only: warmup resolves a follower from the tensor it names.
    if (!s.params_[other].same_dtype_as.empty()) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' follows the dtype of "
                   "'{}', which itself follows '{}'; name '{}' directly",
                   s.name_, d.name, d.same_dtype_as,
                   s.params_[other].same_dtype_as,
                   s.params_[other].same_dtype_as);
    }
  }
  return s;
}

std::string KernelSchema::short_name() const {
  const auto dot = name_.rfind('.');
  return dot == std::string::npos ? name_ : name_.substr(dot + 1);
}

bool KernelSchema::same_parameters(const KernelSchema& other) const {
  if (name_ != other.name_ || params_.size() != other.params_.size()) {
    return false;
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamDesc& a = params_[i];
    const ParamDesc& b = other.params_[i];
    if (a.name != b.name || a.kind != b.kind || a.flags != b.flags ||
        a.allowed_dtypes != b.allowed_dtypes || a.rank != b.rank ||
        a.same_dtype_as != b.same_dtype_as ||
        a.default_value.kind != b.default_value.kind ||
        std::memcmp(&a.default_value.value, &b.default_value.value,
                    sizeof(a.default_value.value)) != 0) {
      return false;
    }
  }
  return true;
}

int KernelSchema::index_of(std::string_view param_name) const {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == param_name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace jitwarm
