// Registry: schemas defined once, newest-first stacks, RAII restore,
// by-name/positional binding, explain, and lock-free reads under a
// concurrent override (run under ThreadSanitizer in CI).
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <atomic>
#include <optional>
#include <thread>

#include "registry.hpp"
#include "schema_builders.hpp"

using namespace jitwarm;
using namespace jitwarm::detail;

namespace {

using namespace schema_builders;
const jw_param_desc kParams[] = {integer("a"), integer("b"), floating("c")};
const jw_kernel_schema kSchema = {
    sizeof(jw_kernel_schema), nullptr, "ns.k", "", kParams, 3, ""};

jw_status noop_compile(void*, const jw_compile_key_view*,
                       const jw_artifact_sink*) {
  return JW_OK;
}
jw_status noop_launch(void*, const jw_artifact_view*, const jw_arg_value*,
                      uint32_t, void*) {
  return JW_OK;
}

// `destroyed`, when given, counts the calls of the destroy callback.
std::shared_ptr<ImplRecord> impl(const char* name, const char* platform = "cpu",
                                 std::vector<const char*> params = {},
                                 const char* kernel = "ns.k",
                                 const char* origin = "test",
                                 std::atomic<int>* destroyed = nullptr) {
  static std::vector<std::vector<const char*>>
      keep;  // param_names must outlive from_c
  keep.push_back(std::move(params));
  jw_kernel_impl c{};
  c.struct_size = sizeof(c);
  c.kernel_name = kernel;
  c.platform = platform;
  c.impl_name = name;
  c.param_names = keep.back().empty() ? nullptr : keep.back().data();
  c.num_param_names = static_cast<uint32_t>(keep.back().size());
  c.compile = noop_compile;
  c.launch = noop_launch;
  if (destroyed != nullptr) {
    c.user_data = destroyed;
    c.destroy = [](void* counter) {
      static_cast<std::atomic<int>*>(counter)->fetch_add(1);
    };
  }
  return ImplRecord::from_c(c, origin, nullptr);
}

std::shared_ptr<ImplRecord> counted_impl(const char* name,
                                         std::atomic<int>* destroyed) {
  return impl(name, "cpu", {}, "ns.k", "test", destroyed);
}

struct CapturingLogger {
  std::vector<std::string> lines;
  Logger logger{
      [this](jw_log_level, const std::string& m) { lines.push_back(m); }};
};

// ns.k defined, with one implementation "base" on cpu.
struct BaseKernel {
  CapturingLogger log;
  Registry registry{log.logger};
  BaseKernel() {
    registry.define_schema(KernelSchema::from_c(kSchema, "s"));
    registry.add(impl("base"), false);
  }
};

}  // namespace

TEST_CASE(
    "given a schema, when defined twice, then the error names both origins") {
  CapturingLogger log;
  Registry r(log.logger);
  r.define_schema(KernelSchema::from_c(kSchema, "/plugins/libfirst.so"));
  try {
    r.define_schema(KernelSchema::from_c(kSchema, "/plugins/libsecond.so"));
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_ALREADY_EXISTS);
    CHECK(std::string(e.what()).find("/plugins/libfirst.so") !=
          std::string::npos);
    CHECK(std::string(e.what()).find("/plugins/libsecond.so") !=
          std::string::npos);
  }
}

TEST_CASE(
    "given two implementations, when the second is registered, then it wins "
    "with a warning "
    "and removing it restores the first") {
  CapturingLogger log;
  Registry r(log.logger);
  r.define_schema(KernelSchema::from_c(kSchema, "origin-schema"));
  r.add(impl("base", "cpu", {}, "ns.k", "libbase.so"), false);
  auto slot = r.slot("ns.k");
  REQUIRE(slot);
  CHECK(slot->state.load()->winner("cpu")->impl_name == "base");

  const uint64_t token =
      r.add(impl("fast", "cpu", {}, "ns.k", "libfast.so"), false);
  CHECK(slot->state.load()->winner("cpu")->impl_name == "fast");
  REQUIRE_FALSE(log.lines.empty());
  CHECK(log.lines.back().find(
            "'fast' from libfast.so overrides 'base' from libbase.so") !=
        std::string::npos);

  const KernelExplanation e = r.explain("ns.k");
  REQUIRE(e.platforms.size() == 1);
  CHECK(e.platforms[0].winner.impl_name == "fast");
  REQUIRE(e.platforms[0].replaced.size() == 1);
  CHECK(e.platforms[0].replaced[0].origin == "libbase.so");
  CHECK(e.to_text().find("replaces 'base' from libbase.so") !=
        std::string::npos);

  r.remove(token);
  CHECK(slot->state.load()->winner("cpu")->impl_name == "base");
  CHECK(r.explain("ns.k").platforms[0].replaced.empty());
}

TEST_CASE(
    "given an implementation for an unknown kernel, then it waits for its "
    "schema only when "
    "allowed") {
  CapturingLogger log;
  Registry r(log.logger);
  CHECK_THROWS_AS(r.add(impl("x"), false), Error);
  r.add(impl("early"), true);
  CHECK(r.pending().size() == 1);
  CHECK_FALSE(r.slot("ns.k"));
  r.define_schema(KernelSchema::from_c(kSchema, "late"));
  CHECK(r.pending().empty());
  CHECK(r.slot("ns.k")->state.load()->winner("cpu")->impl_name == "early");
}

TEST_CASE(
    "given parameter names, when bound, then by name, positional, or an error "
    "listing names") {
  const KernelSchema schema = KernelSchema::from_c(kSchema, "s");
  auto by_name = impl("n", "cpu", {"c", "a", "b"});
  bind_to_schema(*by_name, schema);
  CHECK_FALSE(by_name->positional);
  CHECK(by_name->schema_index == std::vector<uint32_t>{2, 0, 1});

  // The schema's own names in its order: the arguments pass as they come.
  auto in_order = impl("o", "cpu", {"a", "b", "c"});
  bind_to_schema(*in_order, schema);
  CHECK(in_order->positional);
  CHECK(in_order->schema_index == std::vector<uint32_t>{0, 1, 2});

  auto positional = impl("p", "cpu", {"x", "y", "z"});
  bind_to_schema(*positional, schema);
  CHECK(positional->positional);
  CHECK(positional->schema_index == std::vector<uint32_t>{0, 1, 2});

  auto unexpected = impl("u", "cpu", {"a", "b", "d"});
  CHECK_THROWS_WITH(
      bind_to_schema(*unexpected, schema),
      doctest::Contains(
          "unexpected argument name(s) d; the schema's parameters "
          "are: a, b, c"));
  auto missing = impl("m", "cpu", {"a", "b"});
  CHECK_THROWS_WITH(bind_to_schema(*missing, schema),
                    doctest::Contains("does not take parameter(s) c"));
  auto twice = impl("t", "cpu", {"a", "a", "b"});
  CHECK_THROWS_WITH(bind_to_schema(*twice, schema), doctest::Contains("twice"));
}

TEST_CASE(
    "given a batch with one bad entry, when added, then nothing is "
    "registered") {
  CapturingLogger log;
  Registry r(log.logger);
  r.define_schema(KernelSchema::from_c(kSchema, "s"));
  std::vector<std::shared_ptr<ImplRecord>> batch{
      impl("ok"), impl("bad", "cpu", {}, "ns.nope")};
  CHECK_THROWS_WITH(r.add_batch(batch),
                    doctest::Contains("unknown kernel 'ns.nope'"));
  CHECK(r.slot("ns.k")->state.load()->winner("cpu") == nullptr);
}

TEST_CASE(
    "given readers on many threads, when another thread overrides and "
    "restores, then every "
    "read sees a whole state") {
  BaseKernel base;
  Registry& r = base.registry;
  auto slot = r.slot("ns.k");
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0}, saw_override{0}, torn{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const auto reading = r.read_guard();
        const KernelState* s = slot->state.load(std::memory_order_acquire);
        const ImplRecord* w = s->winner("cpu");
        if (w == nullptr) {
          torn.fetch_add(1);
        } else if (w->impl_name == "override") {
          saw_override.fetch_add(1);
        } else if (w->impl_name != "base") {
          torn.fetch_add(1);
        }
        reads.fetch_add(1);
      }
    });
  }
  // Keep overriding until the readers have really raced with it.
  for (int i = 0; i < 200 || reads.load() < 1000; ++i) {
    r.remove(r.add(impl("override"), false));
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(reads.load() > 0);
  CHECK(torn.load() == 0);
  CHECK(slot->state.load()->winner("cpu")->impl_name == "base");
  // With the readers gone, one more change frees every replaced state.
  r.remove(r.add(impl("override"), false));
  CHECK(r.retired_count() == 0);
}

TEST_CASE(
    "given an override released while no one reads, then it is destroyed "
    "before remove returns") {
  BaseKernel base;
  Registry& r = base.registry;
  std::atomic<int> destroyed{0};
  for (int round = 1; round <= 3; ++round) {
    const uint64_t token = r.add(counted_impl("override", &destroyed), false);
    CHECK(destroyed.load() == round - 1);
    r.remove(token);
    CHECK(destroyed.load() == round);
    CHECK(r.retired_count() == 0);
  }
  CHECK(r.slot("ns.k")->state.load()->winner("cpu")->impl_name == "base");
}

TEST_CASE(
    "given a reader still using the overridden state, when the override is "
    "released, then the state lives until the reader leaves") {
  BaseKernel base;
  Registry& r = base.registry;
  std::atomic<int> destroyed{0};
  const uint64_t token = r.add(counted_impl("override", &destroyed), false);
  auto slot = r.slot("ns.k");
  std::optional<StateReaders::Guard> reading(r.read_guard());
  const KernelState* seen = slot->state.load();
  r.remove(token);
  // The reader's state, and the override in it, are intact.
  CHECK(destroyed.load() == 0);
  CHECK(r.retired_count() >= 1);
  CHECK(seen->winner("cpu")->impl_name == "override");
  // Changes while the reader stays free nothing it may hold.
  r.remove(r.add(impl("other"), false));
  CHECK(destroyed.load() == 0);
  CHECK(seen->winner("cpu")->impl_name == "override");
  reading.reset();
  // Once the reader has left, the next read frees it all, with no change.
  CHECK(destroyed.load() == 0);
  r.collect_retired();  // what a launch does when its read has ended
  CHECK(destroyed.load() == 1);
  CHECK(r.retired_count() == 0);
}

TEST_CASE(
    "given an implementation that waited for its schema and does not bind "
    "to it, then it is dropped and destroyed") {
  CapturingLogger log;
  Registry r(log.logger);
  std::atomic<int> destroyed{0};
  r.add(impl("early", "cpu", {"a", "b", "nope"}, "ns.k", "test", &destroyed),
        true);
  r.add(impl("fine"), true);
  CHECK(destroyed.load() == 0);
  r.define_schema(KernelSchema::from_c(kSchema, "late"));
  CHECK(destroyed.load() == 1);
  CHECK(r.slot("ns.k")->state.load()->winner("cpu")->impl_name == "fine");
  CHECK(log.lines.size() >= 1);
}
