// KernelSchema: an owning, validated copy of a jw_kernel_schema.
#include "errors.hpp"

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
    if (d.kind == JW_PARAM_TENSOR && (d.rank < -1 || d.rank > JW_MAX_RANK)) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' has rank {}", s.name_,
                   p.name, d.rank);
    }
    if (p.struct_size >=
        offsetof(jw_param_desc, default_value) + sizeof(jw_scalar)) {
      d.default_value = p.default_value;
    }
    if (p.struct_size >=
            offsetof(jw_param_desc, same_dtype_as) + sizeof(const char*) &&
        p.same_dtype_as != nullptr) {
      d.same_dtype_as = p.same_dtype_as;
    }
    if (d.has_flag(JW_PARAM_HAS_DEFAULT) &&
        d.default_value.kind == JW_SCALAR_NONE) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' says it has a default but "
                   "gives none",
                   s.name_, p.name);
    }
    s.params_.push_back(std::move(d));
  }
  s.same_dtype_index_.assign(s.params_.size(), -1);
  for (std::size_t i = 0; i < s.params_.size(); ++i) {
    const ParamDesc& d = s.params_[i];
    if (d.same_dtype_as.empty()) continue;
    const int other = s.index_of(d.same_dtype_as);
    s.same_dtype_index_[i] = other;
    if (other < 0 || s.params_[other].kind != JW_PARAM_TENSOR ||
        d.same_dtype_as == d.name) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "kernel schema {}: parameter '{}' follows the dtype of "
                   "'{}', which is not another tensor parameter",
                   s.name_, d.name, d.same_dtype_as);
    }
  }
  return s;
}

std::string KernelSchema::short_name() const {
  const auto dot = name_.rfind('.');
  return dot == std::string::npos ? name_ : name_.substr(dot + 1);
}

int KernelSchema::index_of(std::string_view param_name) const {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == param_name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace jitwarm
