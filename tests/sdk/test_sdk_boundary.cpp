// Tests for the plugin SDK's boundary headers: jitwarm/plugin/error.hpp,
// host.hpp (host tables, log, set_error, append), guarded.hpp and
// negotiate.hpp, driven through a fake host table as a core would.
#include <doctest/doctest.h>
#include <jitwarm/plugin.hpp>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace {

namespace sdk = jitwarm::plugin;

// What a core would see of a plugin's messages through one host table.
struct FakeHost {
  std::vector<std::string> errors;
  std::vector<std::pair<jw_log_level, std::string>> logs;
  jw_host_api table{};

  FakeHost() {
    table.struct_size = sizeof table;
    table.abi_version = JITWARM_ABI_VERSION;
    table.host_ctx = this;
    table.log = [](void* ctx, jw_log_level level, const char* message) {
      static_cast<FakeHost*>(ctx)->logs.emplace_back(level, message);
    };
    table.set_error = [](void* ctx, const char* message) {
      static_cast<FakeHost*>(ctx)->errors.emplace_back(message);
    };
    table.define_schema = [](void*, const jw_kernel_schema*) { return JW_OK; };
    table.register_impl = [](void*, const jw_kernel_impl*) { return JW_OK; };
    table.register_platform = [](void*, const jw_platform_desc*) {
      return JW_OK;
    };
  }
  ~FakeHost() { sdk::host_tables().detach(&table); }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;
};

struct NotAnException {
  int code;
};

TEST_CASE(
    "given a body that throws, when run through guarded, then every type "
    "becomes a status and the attached host gets the message") {
  FakeHost host;
  sdk::host_tables().attach(&host.table);

  CHECK(sdk::guarded([] {}) == JW_OK);
  CHECK(sdk::guarded([] {
          throw sdk::PluginError(JW_ERROR_UNSUPPORTED, "no such target");
        }) == JW_ERROR_UNSUPPORTED);
  CHECK(sdk::guarded([] { throw std::bad_alloc(); }) == JW_ERROR_OUT_OF_MEMORY);
  CHECK(sdk::guarded([] { throw std::runtime_error("boom"); }) ==
        JW_ERROR_INTERNAL);
  CHECK(sdk::guarded([] { throw 42; }) == JW_ERROR_INTERNAL);
  CHECK(sdk::guarded([] { throw NotAnException{7}; }) == JW_ERROR_INTERNAL);
  CHECK(host.errors ==
        std::vector<std::string>{"no such target", "out of memory", "boom",
                                 "unknown exception", "unknown exception"});
}

TEST_CASE(
    "given no host table attached, when a guarded body throws, then the "
    "status still comes back and nothing is reported anywhere") {
  sdk::host_tables().detach_all();
  CHECK(sdk::guarded([] {
          throw sdk::PluginError(JW_ERROR_NOT_FOUND, "gone");
        }) == JW_ERROR_NOT_FOUND);
  sdk::log(JW_LOG_ERROR, "to nobody");
  sdk::set_error("to nobody");
}

TEST_CASE(
    "given a failed host call, when checked, then it throws a PluginError "
    "with the host's status and says what failed") {
  CHECK_NOTHROW(sdk::check_host(JW_OK, "register_impl"));
  try {
    sdk::check_host(JW_ERROR_ALREADY_EXISTS, "register_impl");
    FAIL("check_host did not throw");
  } catch (const sdk::PluginError& e) {
    CHECK(e.status() == JW_ERROR_ALREADY_EXISTS);
    CHECK(std::string(e.what()) == "register_impl failed");
  }
}

TEST_CASE(
    "given text sinks, when text is appended, then a sink gets it all and a "
    "null sink or a sink without append takes nothing") {
  std::string collected;
  jw_text_sink sink{};
  sink.struct_size = sizeof sink;
  sink.ctx = &collected;
  sink.append = [](void* ctx, const char* text, size_t length) {
    static_cast<std::string*>(ctx)->append(text, length);
  };
  sdk::append(&sink, "cuda:");
  sdk::append(&sink, std::string_view("sm_90 and more", 5));
  CHECK(collected == "cuda:sm_90");
  sdk::append(nullptr, "lost");
  jw_text_sink empty{};
  sdk::append(&empty, "lost");
}

TEST_CASE(
    "given two runtimes' host tables, when one detaches, then messages go "
    "to the newest table still attached, and nowhere after detach_all") {
  FakeHost first, second;
  sdk::host_tables().attach(&first.table);
  sdk::host_tables().attach(&second.table);
  sdk::log(JW_LOG_WARNING, "to second");
  sdk::host_tables().detach(&second.table);
  sdk::log(JW_LOG_INFO, "to first");
  sdk::set_error("error to first");
  CHECK(sdk::host_tables().attached(&first.table));
  CHECK_FALSE(sdk::host_tables().attached(&second.table));
  sdk::host_tables().detach_all();
  sdk::log(JW_LOG_INFO, "to nobody");
  REQUIRE(second.logs.size() == 1);
  CHECK(second.logs[0] == std::pair{JW_LOG_WARNING, std::string("to second")});
  REQUIRE(first.logs.size() == 1);
  CHECK(first.logs[0].second == "to first");
  CHECK(first.errors == std::vector<std::string>{"error to first"});
}

const jw_plugin_api kApi = [] {
  jw_plugin_api api{};  // zero-initialized: appended fields stay zero
  api.struct_size = sizeof(jw_plugin_api);
  api.name = "sdk-test";
  api.version = "1";
  return api;
}();

jw_plugin_negotiation offer(uint32_t core_min, uint32_t core_max) {
  jw_plugin_negotiation negotiation{};
  negotiation.struct_size = sizeof negotiation;
  negotiation.core_min_version = core_min;
  negotiation.core_max_version = core_max;
  return negotiation;
}

TEST_CASE(
    "given a core's offer, when the plugin answers, then it takes the "
    "newest version both speak, or names the one it needs (P4)") {
  jw_plugin_negotiation newer_core = offer(1, JITWARM_ABI_VERSION + 5);
  CHECK(sdk::answer_negotiation(&newer_core, &kApi) == JW_OK);
  CHECK(newer_core.plugin_version == JITWARM_ABI_VERSION);
  CHECK(newer_core.plugin == &kApi);

  for (auto [core_min, core_max] :
       {std::pair{0u, 0u},
        std::pair{JITWARM_ABI_VERSION + 1, JITWARM_ABI_VERSION + 2}}) {
    CAPTURE(core_min);
    jw_plugin_negotiation negotiation = offer(core_min, core_max);
    CHECK(sdk::answer_negotiation(&negotiation, &kApi) ==
          JW_ERROR_ABI_MISMATCH);
    CHECK(negotiation.plugin_version == JITWARM_ABI_VERSION_MIN);
    CHECK(negotiation.plugin == nullptr);
  }

  CHECK(sdk::answer_negotiation(nullptr, &kApi) == JW_ERROR_INVALID_ARGUMENT);
  jw_plugin_negotiation truncated = offer(1, 1);
  truncated.struct_size = offsetof(jw_plugin_negotiation, plugin);
  CHECK(sdk::answer_negotiation(&truncated, &kApi) ==
        JW_ERROR_INVALID_ARGUMENT);
  CHECK(truncated.plugin == nullptr);
}

TEST_CASE(
    "given register_all's frame, when registration succeeds, fails, is "
    "repeated or gets an unusable table, then the table is attached only "
    "while a registration stands") {
  sdk::host_tables().detach_all();
  FakeHost host;
  bool ran = false;
  CHECK(sdk::register_with_host(&host.table, "sdk-test", [&] { ran = true; }) ==
        JW_OK);
  CHECK(ran);
  CHECK(sdk::host_tables().attached(&host.table));

  // The same table again: refused, and the first registration stands.
  CHECK(sdk::register_with_host(&host.table, "sdk-test", [] {}) ==
        JW_ERROR_ALREADY_EXISTS);
  CHECK(sdk::host_tables().attached(&host.table));
  CHECK(host.errors.back() ==
        "sdk-test: register_all called twice with one host table");
  sdk::host_tables().detach(&host.table);

  // A body that fails: its status and message, and the table detached.
  CHECK(sdk::register_with_host(&host.table, "sdk-test", [] {
          throw sdk::PluginError(JW_ERROR_INVALID_ARGUMENT, "bad schema");
        }) == JW_ERROR_INVALID_ARGUMENT);
  CHECK(host.errors.back() == "bad schema");
  CHECK_FALSE(sdk::host_tables().attached(&host.table));

  // A table without the registration calls, or none: never attached.
  FakeHost lacking;
  lacking.table.register_platform = nullptr;
  CHECK(sdk::register_with_host(&lacking.table, "sdk-test", [] {}) ==
        JW_ERROR_ABI_MISMATCH);
  CHECK_FALSE(sdk::host_tables().attached(&lacking.table));
  CHECK(sdk::register_with_host(nullptr, "sdk-test", [] {}) ==
        JW_ERROR_ABI_MISMATCH);
}

}  // namespace
