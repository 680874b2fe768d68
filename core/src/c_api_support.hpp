// What every C entry point of the host API shares (the c_api_*.cpp files,
// one per topic of jitwarm.h): the contents of the opaque handles, the
// checks of the caller's arguments, sized structs (R3), and the C form of
// each C++ answer with the function that frees it.
//
// With these an entry point is one small function: the pointers it needs,
// in the order of its parameters, and a forward to jitwarm.hpp, e.g.
//
//   return answer({{runtime, "runtime"}}, out_name, "out_name",
//                 [&] { return runtime->runtime.default_platform(); });
//
// Everything runs behind c_guard (errors.hpp), so no exception crosses the
// boundary: a null pointer is JW_ERROR_INVALID_ARGUMENT "<name> is null",
// and an Error thrown by the C++ API is its status and message.
#pragma once

#include <jitwarm/jitwarm.h>
#include <jitwarm/jitwarm.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "errors.hpp"

// The opaque handles of jitwarm.h, each created by one entry point and
// deleted by its free function.
struct jw_runtime {
  jitwarm::Runtime runtime;
  // Every directory jw_runtime_load_plugins searched, for the load report.
  std::vector<std::string> searched_directories;
};
struct jw_kernel_handle {
  jitwarm::KernelHandle handle;
};
struct jw_registration {
  jitwarm::RegistrationHandle handle;
};
struct jw_compile_key {
  jitwarm::CompileKey key;
  std::string text;  // key.text(), kept so jw_compile_key_get_info can lend it
};
struct jw_warmup_manifest {
  jitwarm::WarmupManifest manifest;
};

namespace jitwarm::detail::c_api {

// --- The caller's arguments -------------------------------------------------

template <typename T>
void require(const T* p, const char* what) {
  if (p == nullptr) fail(JW_ERROR_INVALID_ARGUMENT, "{} is null", what);
}

// A pointer argument an entry point needs, with its name for the message;
// may_be_null for an array of no elements.
struct Required {
  const void* pointer;
  const char* name;
  bool may_be_null = false;
};
// An array argument of `count` elements: null only when there are none.
inline Required elements(const void* array, std::size_t count,
                         const char* name) {
  return Required{array, name, count == 0};
}
// Checks each argument in order; the first null one fails.
void require_all(std::initializer_list<Required> arguments);

// The caller's struct `in` (R3: an older caller's is shorter; its missing
// fields read as zero). NULL gives all zeros.
template <typename Struct>
Struct read_sized(const Struct* in, const char* what) {
  Struct out{};
  if (in != nullptr) {
    if (in->struct_size < offsetof(Struct, next) + sizeof(in->next)) {
      fail(JW_ERROR_INVALID_ARGUMENT, "{}: struct_size {} is too small", what,
           in->struct_size);
    }
    std::memcpy(static_cast<void*>(&out), in,
                std::min<std::size_t>(in->struct_size, sizeof(Struct)));
  }
  out.struct_size = sizeof(Struct);
  return out;
}

// Writes `value` into the caller's struct `out` (R3 with the core as the
// writer): the fields both sides know, zeros beyond them, and the number of
// bytes filled in struct_size.
template <typename Struct>
void write_sized(Struct* out, const Struct& value, const char* what) {
  require(out, what);
  const uint32_t caller_size = out->struct_size;
  if (caller_size < offsetof(Struct, next) + sizeof(out->next)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "{}: struct_size {} is too small (set it to the struct's sizeof)",
         what, caller_size);
  }
  const std::size_t filled = std::min<std::size_t>(caller_size, sizeof(Struct));
  std::memcpy(static_cast<void*>(out), &value, filled);
  std::memset(reinterpret_cast<char*>(out) + filled, 0, caller_size - filled);
  out->struct_size = static_cast<uint32_t>(filled);
}

// The C options as the C++ ones (NULL: all defaults).
RuntimeOptions runtime_options_of(const jw_runtime_options* options);

// `mode` as the caller passed it, any int (raw_enum reads it for the check).
// nullopt for JW_JIT_MONITOR_DEFAULT where allow_default.
std::optional<JitMonitorMode> monitor_mode_of(const jw_jit_monitor_mode& mode,
                                              bool allow_default);

// keys[0, count) of the caller's array of keys; `what` names the array.
std::vector<CompileKey> compile_keys_of(const jw_compile_key* const* keys,
                                        uint32_t count, const char* what);

// The text or the JSON form of a report, as the caller asked; only the one
// asked for is made.
template <typename Text, typename Json>
std::string text_in(const jw_text_format& format, Text&& text, Json&& json) {
  switch (raw_enum(format)) {
    case JW_FORMAT_TEXT: return text();
    case JW_FORMAT_JSON: return json();
  }
  fail(JW_ERROR_INVALID_ARGUMENT,
       "unknown text format {} (use JW_FORMAT_TEXT or JW_FORMAT_JSON)",
       raw_enum(format));
}

// --- The C form of each C++ answer ------------------------------------------
// Each is owned by the caller, who frees it with the jw_*_free function of
// its type (a char* with jw_string_free); each is defined in the file of
// its topic.

char* to_c(std::string_view text);
jw_string_list* to_c(std::vector<std::string> strings);
jw_compile_key* to_c(CompileKey key);
jw_compile_key_list* to_c(std::vector<CompileKey> keys);
jw_platform_list* to_c(std::vector<PlatformInfo> platforms);
jw_tune_result* to_c(TuneResult result);
jw_cache_settings* to_c(CacheSettings settings);
jw_external_entry* to_c(ExternalEntry entry);
jw_cache_bundle_summary* to_c(CacheBundleSummary summary);
jw_cache_listing* to_c(CacheListing listing);
jw_cache_report* to_c(CacheReport report);
// An answer that may be none: NULL for none.
template <typename T>
auto to_c(std::optional<T> value) -> decltype(to_c(std::move(*value))) {
  if (!value) return nullptr;
  return to_c(std::move(*value));
}

// A query's answer as `Out`: its C form, or the answer itself where it is
// one already (a handle made with new, an int32_t from a bool, a C struct).
template <typename Out, typename Answer>
Out c_form_of(Answer&& answer) {
  if constexpr (std::is_convertible_v<Answer, Out>) {
    return std::forward<Answer>(answer);
  } else {
    return to_c(std::forward<Answer>(answer));
  }
}

// --- Entry points ------------------------------------------------------------

// A command: behind c_guard, `inputs` checked in order, then `body` run.
template <typename Body>
jw_status act(std::initializer_list<Required> inputs, Body&& body) {
  return c_guard([&] {
    require_all(inputs);
    body();
  });
}

// A query answered through `out`: behind c_guard, `inputs` checked in
// order, then `out`, and only then does `query` run (it may count devices
// or read the cache tiers); *out is set only when it returns.
template <typename Out, typename Query>
jw_status answer(std::initializer_list<Required> inputs, Out* out,
                 const char* out_name, Query&& query) {
  return c_guard([&] {
    require_all(inputs);
    require(out, out_name);
    *out = c_form_of<Out>(query());
  });
}

// As answer, with *out NULL before `query` runs: NULL after a failure, and
// for an answer that is none.
template <typename Out, typename Query>
jw_status answer_or_null(std::initializer_list<Required> inputs, Out* out,
                         const char* out_name, Query&& query) {
  return answer(inputs, out, out_name, [&] {
    *out = nullptr;
    return query();
  });
}

// As answer_or_null, for an `out` the caller may pass as NULL (it does not
// want the answer; the query runs all the same).
template <typename Out, typename Query>
jw_status answer_if_asked(std::initializer_list<Required> inputs, Out* out,
                          Query&& query) {
  return act(inputs, [&] {
    if (out != nullptr) *out = nullptr;
    auto result = query();
    if (out != nullptr) *out = c_form_of<Out>(std::move(result));
  });
}

// --- What the core allocates ---------------------------------------------

// Sets the header (R3) of a struct the core allocates: its size, and no
// extension.
template <typename Struct>
void set_header(Struct& c) {
  c.struct_size = sizeof(Struct);
  c.next = nullptr;
}

// A C struct the core hands out, and the C++ value its pointers lend from.
// The value is moved in as it is made and never assigned: whatever member of
// a jitwarm.hpp type the compiler does not inline is exported with the API
// (default visibility), so the C forms keep to moves the export list has.
template <typename CStruct, typename Value>
struct Owned : CStruct {
  using c_type = CStruct;
  template <typename V>
  explicit Owned(V&& v) : CStruct{}, value(std::forward<V>(v)) {
    set_header<CStruct>(*this);
  }
  Value value;
};

// The items of a list the core hands out, and the array of pointers to them
// the C struct lends (pointers, so an item that grows a field does not move
// the next one).
template <typename Item, typename CItem = typename Item::c_type>
struct OwnedItems {
  std::vector<std::unique_ptr<Item>> items;
  std::vector<const CItem*> pointers;

  // A new item, made of `args`, at the end; its C struct zeroed but for
  // its header.
  template <typename... Args>
  Item& add(Args&&... args) {
    items.push_back(std::make_unique<Item>(std::forward<Args>(args)...));
    pointers.push_back(items.back().get());
    set_header<CItem>(*items.back());
    return *items.back();
  }
  const CItem* const* data() const { return pointers.data(); }
  uint32_t count() const { return static_cast<uint32_t>(pointers.size()); }
};

}  // namespace jitwarm::detail::c_api
