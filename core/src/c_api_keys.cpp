// The C API of compile keys and the specialization rules (jitwarm.h:
// "Compile keys", "Specialization"): keys made, read, decoded and looked up
// in a runtime's caches.
#include <cstdint>

#include "c_api_support.hpp"

namespace jitwarm::detail::c_api {
namespace {

struct OwnedCompileKeyList : jw_compile_key_list {
  std::vector<jw_compile_key*> pointers;
  ~OwnedCompileKeyList() {
    for (jw_compile_key* key : pointers) delete key;
  }
};

}  // namespace

jw_compile_key* to_c(CompileKey key) {
  std::string text = key.text();
  return new jw_compile_key{std::move(key), std::move(text)};
}

jw_compile_key_list* to_c(std::vector<CompileKey> keys) {
  auto list = std::make_unique<OwnedCompileKeyList>();
  // Reserved first, so no push_back can throw with a key in hand.
  list->pointers.reserve(keys.size());
  for (auto& key : keys) list->pointers.push_back(to_c(std::move(key)));
  static_cast<jw_compile_key_list&>(*list) = {
      sizeof(jw_compile_key_list), nullptr, list->pointers.data(),
      static_cast<uint32_t>(list->pointers.size())};
  return list.release();
}

}  // namespace jitwarm::detail::c_api

namespace c_api = jitwarm::detail::c_api;

extern "C" {

JITWARM_EXPORT jw_status jw_compile_key_create(const char* kernel_name,
                                               const char* impl_name,
                                               const char* target,
                                               jw_compile_key** out_key) {
  return c_api::answer(
      {{kernel_name, "kernel_name"},
       {impl_name, "impl_name"},
       {target, "target"}},
      out_key, "out_key",
      [&] { return jitwarm::CompileKey(kernel_name, impl_name, target, {}); });
}

JITWARM_EXPORT jw_status jw_compile_key_get_info(
    const jw_compile_key* key, jw_compile_key_info* out_info) {
  return c_api::act({{key, "key"}}, [&] {
    jw_compile_key_info info{};
    info.struct_size = sizeof(info);
    info.text = key->text.c_str();
    info.kernel_name = key->key.kernel_name().c_str();
    info.impl_name = key->key.impl_name().c_str();
    info.target = key->key.target().c_str();
    info.encoding = key->key.encoding().data();
    info.encoding_size = key->key.encoding().size();
    info.hash_lo = key->key.hash().lo;
    info.hash_hi = key->key.hash().hi;
    c_api::write_sized(out_info, info, "out_info");
  });
}

JITWARM_EXPORT jw_status jw_compile_key_decode(const void* encoding,
                                               size_t encoding_size,
                                               jw_compile_key** out_key) {
  return c_api::answer(
      {c_api::elements(encoding, encoding_size, "encoding")}, out_key,
      "out_key", [&] {
        return jitwarm::CompileKey::decode(std::string_view(
            static_cast<const char*>(encoding), encoding_size));
      });
}

JITWARM_EXPORT void jw_compile_key_free(jw_compile_key* key) {
  delete key;
}

JITWARM_EXPORT jw_status jw_runtime_is_cached(jw_runtime* runtime,
                                              const jw_compile_key* key,
                                              int32_t* out_cached) {
  return c_api::answer({{runtime, "runtime"}, {key, "key"}}, out_cached,
                       "out_cached",
                       [&] { return runtime->runtime.is_cached(key->key); });
}

JITWARM_EXPORT jw_status jw_runtime_explain_miss(jw_runtime* runtime,
                                                 const jw_compile_key* key,
                                                 char** out_text) {
  return c_api::answer(
      {{runtime, "runtime"}, {key, "key"}}, out_text, "out_text",
      [&] { return runtime->runtime.explain_miss(key->key).to_text(); });
}

JITWARM_EXPORT jw_status jw_specialize_integer(jw_scalar value,
                                               int32_t do_not_specialize,
                                               jw_int_spec* out_spec) {
  return c_api::answer({}, out_spec, "out_spec", [&] {
    __int128 v = 0;
    switch (jitwarm::detail::raw_enum(value.kind)) {
      case JW_SCALAR_INT: v = value.value.i; break;
      case JW_SCALAR_UINT: v = value.value.u; break;
      default:
        jitwarm::detail::fail(
            JW_ERROR_INVALID_ARGUMENT,
            "jw_specialize_integer takes JW_SCALAR_INT or JW_SCALAR_UINT, "
            "got scalar kind {}",
            jitwarm::detail::raw_enum(value.kind));
    }
    const jitwarm::IntSpec spec =
        jitwarm::specialize_integer(v, do_not_specialize != 0);
    return jw_int_spec{spec.type, spec.value_class};
  });
}

JITWARM_EXPORT jw_status jw_scalar_specialization_rep(jw_int_spec spec,
                                                      jw_scalar* out_value) {
  return c_api::answer({}, out_value, "out_value", [&] {
    const int type = jitwarm::detail::raw_enum(spec.type);
    const int value_class = jitwarm::detail::raw_enum(spec.value_class);
    if (type < JW_INT_I32 || type > JW_INT_U64) {
      jitwarm::detail::fail(JW_ERROR_INVALID_ARGUMENT,
                            "unknown integer type {}", type);
    }
    if (value_class < JW_INT_CLASS_NONE || value_class > JW_INT_CLASS_DIV16) {
      jitwarm::detail::fail(JW_ERROR_INVALID_ARGUMENT,
                            "unknown integer value class {}", value_class);
    }
    const __int128 rep = jitwarm::scalar_specialization_rep(
        jitwarm::IntSpec{static_cast<jw_int_type>(type),
                         static_cast<jw_int_class>(value_class)});
    return rep > INT64_MAX ? jitwarm::scalar_uint(static_cast<uint64_t>(rep))
                           : jitwarm::scalar_int(static_cast<int64_t>(rep));
  });
}

JITWARM_EXPORT void jw_compile_key_list_free(jw_compile_key_list* list) {
  delete static_cast<c_api::OwnedCompileKeyList*>(list);
}

}  // extern "C"
