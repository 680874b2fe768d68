// A byte format for C kernel schemas (jw_kernel_schema + jw_param_desc), so
// the schema fuzz target can build any schema a plugin could hand the core,
// including sizes, enum values and references no well-behaved plugin would
// use. encode() writes a schema in it (for seeds); decode() reads any bytes
// (a short input reads as zeros).
//
//   schema:  size(flagged) name summary launch_rule count:u8 param*count
//   param:   size(flagged) name kind:u32 flags:u32 dtypes:u32 rank:i32
//            default_kind:u32 default_value:u64 same_dtype_as(ref)
//   size:    u8 0 = sizeof the struct, else u32 raw
//   string:  u8 length (mod 32), bytes; length 255 = a null pointer
//   ref:     u8 0 = null, 1..128 = the name of parameter (n-1) mod count,
//            else a string
// Integers are little-endian, in the core's codec (core/src/byte_fields.hpp).
#pragma once

#include <jitwarm/jitwarm.h>

#include "byte_fields.hpp"

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::fuzz {

struct DecodedSchema {
  jw_kernel_schema schema{};
  std::vector<jw_param_desc> params;
  std::deque<std::string> strings;  // what the pointers point into
};

class SchemaReader {
 public:
  explicit SchemaReader(std::string_view bytes) : in_(bytes) {}
  uint8_t u8() {
    return pos_ < in_.size() ? static_cast<uint8_t>(in_[pos_++]) : 0;
  }
  uint32_t u32() { return static_cast<uint32_t>(bits(4)); }
  uint64_t u64() { return bits(8); }
  const char* string(std::deque<std::string>& storage) {
    const uint8_t n = u8();
    if (n == 255) return nullptr;
    std::string s;
    for (uint8_t i = 0; i < n % 32; ++i) s.push_back(static_cast<char>(u8()));
    return storage.emplace_back(std::move(s)).c_str();
  }

 private:
  // Bytes past the end read as zeros.
  uint64_t bits(int bytes) {
    char buffer[8] = {};
    for (int i = 0; i < bytes; ++i) buffer[i] = static_cast<char>(u8());
    return detail::get_le(buffer, bytes);
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

// Enum fields get raw values as a C plugin could store them.
template <typename Enum>
void store_raw(Enum& field, uint32_t raw) {
  static_assert(sizeof(Enum) == sizeof(raw));
  std::memcpy(&field, &raw, sizeof raw);
}

inline void decode_schema(std::string_view bytes, DecodedSchema& out) {
  SchemaReader r(bytes);
  const auto size = [&](uint32_t natural) {
    return r.u8() == 0 ? natural : r.u32();
  };
  out.schema.struct_size = size(sizeof(jw_kernel_schema));
  out.schema.name = r.string(out.strings);
  out.schema.summary = r.string(out.strings);
  out.schema.launch_rule = r.string(out.strings);
  const uint32_t count = r.u8() % 9;
  out.params.resize(count);
  for (jw_param_desc& p : out.params) {
    p.struct_size = size(sizeof(jw_param_desc));
    p.name = r.string(out.strings);
    store_raw(p.kind, r.u32());
    p.flags = r.u32();
    p.allowed_dtypes = r.u32();
    p.rank = static_cast<int32_t>(r.u32());
    store_raw(p.default_value.kind, r.u32());
    p.default_value.value.u = r.u64();
  }
  // References last: they may name any parameter.
  for (jw_param_desc& p : out.params) {
    const uint8_t ref = r.u8();
    if (ref == 0) {
      p.same_dtype_as = nullptr;
    } else if (ref <= 128) {
      p.same_dtype_as = out.params[(ref - 1) % count].name;
    } else {
      p.same_dtype_as = r.string(out.strings);
    }
  }
  out.schema.params = out.params.data();
  out.schema.num_params = count;
}

// The inverse, for well-formed schemas (seeds).
inline std::string encode_schema(const jw_kernel_schema& s) {
  std::string out;
  const auto u32 = [&](uint32_t v) { detail::put_u32(out, v); };
  const auto string = [&](const char* text) {
    if (text == nullptr) {
      out.push_back(static_cast<char>(255));
      return;
    }
    const std::string_view v(text);
    out.push_back(static_cast<char>(v.size() % 32));
    out.append(v.substr(0, v.size() % 32));
  };
  out.push_back(0);
  string(s.name);
  string(s.summary);
  string(s.launch_rule);
  out.push_back(static_cast<char>(s.num_params));
  for (uint32_t i = 0; i < s.num_params; ++i) {
    const jw_param_desc& p = s.params[i];
    out.push_back(0);
    string(p.name);
    u32(static_cast<uint32_t>(p.kind));
    u32(p.flags);
    u32(p.allowed_dtypes);
    u32(static_cast<uint32_t>(p.rank));
    u32(static_cast<uint32_t>(p.default_value.kind));
    detail::put_u64(out, p.default_value.value.u);
  }
  for (uint32_t i = 0; i < s.num_params; ++i) {
    const char* ref = s.params[i].same_dtype_as;
    uint8_t index = 0;
    for (uint32_t j = 0; ref != nullptr && j < s.num_params; ++j) {
      if (std::strcmp(ref, s.params[j].name) == 0)
        index = static_cast<uint8_t>(j + 1);
    }
    out.push_back(static_cast<char>(index));
  }
  return out;
}

}  // namespace jitwarm::fuzz
