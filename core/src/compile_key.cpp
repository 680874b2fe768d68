// CompileKey: the canonical encoding, its hash, the text form and decoding.
//
// Encoding (little-endian; docs/compile-keys.md, golden-tested):
//   "JWK" format-version(u8 = 1)
//   str kernel, str impl, str target          (str = u32 length + bytes)
//   u32 parameter count, then per parameter:
//     str name, u8 kind, and by kind:
//     tensor:    u8 dtype, u8 alignment, u8 n, n x (u8 int type, u8 class)
//     int:       u8 int type, u8 class
//     float:     u8 float type
//     scalar:    u8 scalar kind (int|float), then as int or float
//     constexpr: u8 scalar kind, 8 bytes of value
//   format version 2 only (a tuned key: a non-empty config), then
//     u32 config count (1 to 64), per value, sorted by name:
//     str name, 8 bytes of value (int64)
// An untuned key is written as version 1, so every key made before configs
// existed keeps its encoding, hash and cache entries.
// Changing any of this requires bumping the format version (the golden test
// fails otherwise), because persistent cache entries are named by it.
#include <jitwarm/plugin/names.hpp>

#include "byte_fields.hpp"
#include "errors.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace jitwarm {
namespace {

constexpr char kMagic[3] = {'J', 'W', 'K'};
constexpr uint8_t kUntunedFormatVersion = 1;
constexpr uint8_t kTunedFormatVersion = 2;
constexpr uint32_t kMaxConfigValues = 64;
// Generous upper bounds that keep a corrupt length from allocating gigabytes.
constexpr uint32_t kMaxStringLength = 4096;
constexpr uint32_t kMaxParams = 1024;

// Appends whole fields, not bytes: a launch encodes one key per call.
class Writer {
 public:
  explicit Writer(std::size_t expected_size) { out_.reserve(expected_size); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { detail::put_le(out_, v, 4); }
  void u64(uint64_t v) { detail::put_le(out_, v, 8); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint8_t u8() {
    need(1, "a byte");
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint32_t u32() {
    return static_cast<uint32_t>(little_endian(4, "a 32-bit length"));
  }
  uint64_t u64() { return little_endian(8, "a 64-bit value"); }
  std::string str(const char* what) {
    const uint32_t n = u32();
    if (n > kMaxStringLength) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "compile key: {} of length {} exceeds {}", what, n,
                   kMaxStringLength);
    }
    need(n, what);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == in_.size(); }
  std::size_t position() const { return pos_; }

 private:
  uint64_t little_endian(int bytes, const char* what) {
    need(static_cast<std::size_t>(bytes), what);
    const uint64_t v = detail::get_le(in_.data() + pos_, bytes);
    pos_ += static_cast<std::size_t>(bytes);
    return v;
  }
  void need(std::size_t n, const char* what) const {
    if (in_.size() - pos_ < n) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "compile key: truncated at byte {} (expected {})", pos_,
                   what);
    }
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

void write_int_spec(Writer& w, IntSpec s) {
  w.u8(static_cast<uint8_t>(s.type));
  w.u8(static_cast<uint8_t>(s.value_class));
}

IntSpec read_int_spec(Reader& r) {
  IntSpec s;
  const uint8_t type = r.u8();
  const uint8_t cls = r.u8();
  if (type < JW_INT_I32 || type > JW_INT_U64) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "compile key: bad integer type {}",
                 type);
  }
  if (cls > JW_INT_CLASS_DIV16) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "compile key: bad integer class {}",
                 cls);
  }
  s.type = static_cast<jw_int_type>(type);
  s.value_class = static_cast<jw_int_class>(cls);
  if (s.value_class == JW_INT_CLASS_ONE && s.type != JW_INT_I32) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "compile key: the class 'one' only exists for i32");
  }
  return s;
}

jw_float_type read_float_type(Reader& r) {
  const uint8_t t = r.u8();
  if (t != JW_FLOAT_F32 && t != JW_FLOAT_F64) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT, "compile key: bad float type {}",
                 t);
  }
  return static_cast<jw_float_type>(t);
}

std::string encode(const std::string& kernel, const std::string& impl,
                   const std::string& target,
                   const std::vector<ParamSpec>& params,
                   const TuneConfig& config) {
  std::size_t expected = 32 + kernel.size() + impl.size() + target.size();
  for (const ParamSpec& p : params) expected += 24 + p.name.size();
  for (const TuneValue& v : config) expected += 12 + v.name.size();
  Writer w(expected);
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u8(config.empty() ? kUntunedFormatVersion : kTunedFormatVersion);
  w.str(kernel);
  w.str(impl);
  w.str(target);
  w.u32(static_cast<uint32_t>(params.size()));
  for (const ParamSpec& p : params) {
    w.str(p.name);
    w.u8(static_cast<uint8_t>(p.kind));
    switch (p.kind) {
      case JW_PARAM_TENSOR:
        w.u8(static_cast<uint8_t>(p.dtype));
        w.u8(static_cast<uint8_t>(p.alignment));
        w.u8(static_cast<uint8_t>(p.stride_specs.size()));
        for (const IntSpec& s : p.stride_specs) write_int_spec(w, s);
        break;
      case JW_PARAM_INT: write_int_spec(w, p.int_spec); break;
      case JW_PARAM_FLOAT: w.u8(static_cast<uint8_t>(p.float_type)); break;
      case JW_PARAM_SCALAR:
        w.u8(static_cast<uint8_t>(p.scalar_kind));
        if (p.scalar_kind == JW_SCALAR_FLOAT) {
          w.u8(static_cast<uint8_t>(p.float_type));
        } else {
          write_int_spec(w, p.int_spec);
        }
        break;
      case JW_PARAM_CONSTEXPR:
        w.u8(static_cast<uint8_t>(p.constexpr_value.kind));
        if (p.constexpr_value.kind == JW_SCALAR_FLOAT) {
          w.u64(std::bit_cast<uint64_t>(p.constexpr_value.value.f));
        } else {
          w.u64(p.constexpr_value.value.u);
        }
        break;
    }
  }
  if (!config.empty()) {
    w.u32(static_cast<uint32_t>(config.size()));
    for (const TuneValue& v : config) {
      w.str(v.name);
      w.u64(static_cast<uint64_t>(v.value));
    }
  }
  return w.take();
}

std::string int_spec_text(IntSpec s) {
  std::string t(plugin::int_type_name(s.type).value_or("u64"));
  if (s.value_class == JW_INT_CLASS_ONE) t += ":1";
  if (s.value_class == JW_INT_CLASS_DIV16) t += ":D";
  return t;
}

std::string scalar_text(const jw_scalar& s) {
  switch (s.kind) {
    case JW_SCALAR_INT: return std::to_string(s.value.i);
    case JW_SCALAR_UINT: return std::to_string(s.value.u);
    case JW_SCALAR_FLOAT: return fmt::format("{}", s.value.f);
    case JW_SCALAR_BOOL: return s.value.i != 0 ? "True" : "False";
    default: return "?";
  }
}

}  // namespace

bool operator==(const ParamSpec& a, const ParamSpec& b) {
  if (a.name != b.name || a.kind != b.kind) return false;
  switch (a.kind) {
    case JW_PARAM_TENSOR:
      return a.dtype == b.dtype && a.alignment == b.alignment &&
             a.stride_specs == b.stride_specs;
    case JW_PARAM_INT: return a.int_spec == b.int_spec;
    case JW_PARAM_FLOAT: return a.float_type == b.float_type;
    case JW_PARAM_SCALAR:
      return a.scalar_kind == b.scalar_kind &&
             (a.scalar_kind == JW_SCALAR_FLOAT ? a.float_type == b.float_type
                                               : a.int_spec == b.int_spec);
    case JW_PARAM_CONSTEXPR:
      return a.constexpr_value.kind == b.constexpr_value.kind &&
             a.constexpr_value.value.u == b.constexpr_value.value.u;
  }
  return false;
}

std::string Hash128::hex() const {
  return fmt::format("{:016x}{:016x}", hi, lo);
}

std::string tune_config_text(const TuneConfig& config) {
  if (config.empty()) return {};
  std::string out = "{";
  for (const TuneValue& v : config) {
    if (out.size() > 1) out += ", ";
    out += fmt::format("{}={}", v.name, v.value);
  }
  return out + "}";
}

CompileKey::CompileKey(std::string kernel_name, std::string impl_name,
                       std::string target, std::vector<ParamSpec> params,
                       TuneConfig config)
    : kernel_name_(std::move(kernel_name)),
      impl_name_(std::move(impl_name)),
      target_(std::move(target)),
      params_(std::move(params)),
      config_(std::move(config)) {
  // One order, so that one config is one encoding whoever lists it.
  std::sort(config_.begin(), config_.end());
  for (std::size_t i = 0; i < config_.size(); ++i) {
    if (config_[i].name.empty()) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "compile key: a config value without a name");
    }
    if (i > 0 && config_[i].name == config_[i - 1].name) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "compile key: config value '{}' given twice",
                   config_[i].name);
    }
  }
  if (config_.size() > kMaxConfigValues) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "compile key: {} config values exceed {}", config_.size(),
                 kMaxConfigValues);
  }
  encoding_ = encode(kernel_name_, impl_name_, target_, params_, config_);
  const XXH128_hash_t h = XXH3_128bits(encoding_.data(), encoding_.size());
  hash_.lo = h.low64;
  hash_.hi = h.high64;
}

CompileKey CompileKey::with_config(TuneConfig config) const {
  return CompileKey(kernel_name_, impl_name_, target_, params_,
                    std::move(config));
}

const ParamSpec* CompileKey::find_param(std::string_view name) const {
  for (const ParamSpec& p : params_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string ParamSpec::text() const {
  const ParamSpec& p = *this;
  std::string out = p.name;
  switch (p.kind) {
    case JW_PARAM_TENSOR:
      out += ':';
      out += dtype_short_name(p.dtype);
      out += '*';
      if (!p.stride_specs.empty()) {
        out += '[';
        for (std::size_t i = 0; i < p.stride_specs.size(); ++i) {
          if (i != 0) out += ',';
          out += int_spec_text(p.stride_specs[i]);
        }
        out += ']';
      }
      if (p.alignment == JW_ALIGN_16) out += ":a16";
      if (p.alignment == JW_ALIGN_NONE) out += ":a1";
      break;
    case JW_PARAM_INT:
      out += ':';
      out += int_spec_text(p.int_spec);
      break;
    case JW_PARAM_FLOAT:
      out += p.float_type == JW_FLOAT_F64 ? ":fp64" : ":fp32";
      break;
    case JW_PARAM_SCALAR:
      out += ':';
      out += p.scalar_kind == JW_SCALAR_FLOAT
                 ? (p.float_type == JW_FLOAT_F64 ? "fp64" : "fp32")
                 : int_spec_text(p.int_spec);
      break;
    case JW_PARAM_CONSTEXPR:
      out += '=';
      out += scalar_text(p.constexpr_value);
      break;
  }
  return out;
}

std::string CompileKey::text() const {
  const auto dot = kernel_name_.rfind('.');
  std::string out =
      dot == std::string::npos ? kernel_name_ : kernel_name_.substr(dot + 1);
  out += '[';
  out += target_;
  out += "](";
  bool first = true;
  for (const ParamSpec& p : params_) {
    if (!first) out += ", ";
    first = false;
    out += p.text();
  }
  out += ')';
  if (!config_.empty()) out += ' ' + tune_config_text(config_);
  out += " via ";
  out += impl_name_;
  return out;
}

CompileKey CompileKey::decode(std::string_view encoding) {
  Reader r(encoding);
  for (char c : kMagic) {
    if (r.u8() != static_cast<uint8_t>(c)) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT, "compile key: bad magic bytes");
    }
  }
  const uint8_t version = r.u8();
  if (version != kUntunedFormatVersion && version != kTunedFormatVersion) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "compile key: format version {} (this build reads {} and {})",
                 version, kUntunedFormatVersion, kTunedFormatVersion);
  }
  std::string kernel = r.str("kernel name");
  std::string impl = r.str("implementation name");
  std::string target = r.str("target");
  const uint32_t count = r.u32();
  if (count > kMaxParams) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "compile key: {} parameters exceed {}", count, kMaxParams);
  }
  std::vector<ParamSpec> params;
  params.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    ParamSpec p;
    p.name = r.str("parameter name");
    const uint8_t kind = r.u8();
    if (kind < JW_PARAM_TENSOR || kind > JW_PARAM_SCALAR) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "compile key: parameter '{}' has bad kind {}", p.name, kind);
    }
    p.kind = static_cast<jw_param_kind>(kind);
    switch (p.kind) {
      case JW_PARAM_TENSOR: {
        const uint8_t dtype = r.u8();
        // Range first: an integer outside the enum's values is no jw_dtype.
        if (dtype >= JW_DTYPE_COUNT ||
            dtype_size(static_cast<jw_dtype>(dtype)) == 0) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: parameter '{}' has bad dtype {}", p.name,
                       dtype);
        }
        p.dtype = static_cast<jw_dtype>(dtype);
        const uint8_t alignment = r.u8();
        if (alignment > JW_ALIGN_NONE) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: parameter '{}' has bad alignment {}",
                       p.name, alignment);
        }
        p.alignment = static_cast<jw_alignment>(alignment);
        const uint8_t strides = r.u8();
        if (strides > JW_MAX_RANK) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: parameter '{}' has {} strides", p.name,
                       strides);
        }
        for (uint8_t s = 0; s < strides; ++s)
          p.stride_specs.push_back(read_int_spec(r));
        break;
      }
      case JW_PARAM_INT: p.int_spec = read_int_spec(r); break;
      case JW_PARAM_FLOAT: p.float_type = read_float_type(r); break;
      case JW_PARAM_SCALAR: {
        const uint8_t sk = r.u8();
        if (sk == JW_SCALAR_FLOAT) {
          p.scalar_kind = JW_SCALAR_FLOAT;
          p.float_type = read_float_type(r);
        } else if (sk == JW_SCALAR_INT) {
          p.scalar_kind = JW_SCALAR_INT;
          p.int_spec = read_int_spec(r);
        } else {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: parameter '{}' has bad scalar kind {}",
                       p.name, sk);
        }
        break;
      }
      case JW_PARAM_CONSTEXPR: {
        const uint8_t sk = r.u8();
        if (sk < JW_SCALAR_INT || sk > JW_SCALAR_BOOL) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: constexpr '{}' has bad kind {}", p.name,
                       sk);
        }
        p.constexpr_value.kind = static_cast<jw_scalar_kind>(sk);
        p.constexpr_value.value.u = r.u64();
        if (sk == JW_SCALAR_UINT &&
            p.constexpr_value.value.u <= static_cast<uint64_t>(INT64_MAX)) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: constexpr '{}' is not in canonical form "
                       "(an unsigned value that fits int64)",
                       p.name);
        }
        if (sk == JW_SCALAR_BOOL && p.constexpr_value.value.u > 1) {
          detail::fail(JW_ERROR_INVALID_ARGUMENT,
                       "compile key: constexpr '{}' is a bool with value {}",
                       p.name, p.constexpr_value.value.u);
        }
        break;
      }
    }
    params.push_back(std::move(p));
  }
  TuneConfig config;
  if (version == kTunedFormatVersion) {
    const uint32_t values = r.u32();
    if (values == 0 || values > kMaxConfigValues) {
      detail::fail(JW_ERROR_INVALID_ARGUMENT,
                   "compile key: a tuned key with {} config values (1 to {})",
                   values, kMaxConfigValues);
    }
    for (uint32_t i = 0; i < values; ++i) {
      TuneValue v;
      v.name = r.str("config name");
      v.value = static_cast<int64_t>(r.u64());
      config.push_back(std::move(v));
    }
  }
  if (!r.done()) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "compile key: {} trailing bytes after byte {}",
                 encoding.size() - r.position(), r.position());
  }
  CompileKey key(std::move(kernel), std::move(impl), std::move(target),
                 std::move(params), std::move(config));
  // Canonical means one encoding per key: anything that re-encodes
  // differently (e.g. a uint constexpr that fits int64, a config out of
  // order) is rejected.
  if (key.encoding() != encoding) {
    detail::fail(JW_ERROR_INVALID_ARGUMENT,
                 "compile key: not in canonical form");
  }
  return key;
}

}  // namespace jitwarm
