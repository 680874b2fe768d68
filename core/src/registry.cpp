#include "registry.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "errors.hpp"
#include "plugin_calls.hpp"
#include "prepared_launch.hpp"
#include "striped_counter.hpp"

namespace jitwarm::detail {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

std::vector<std::string> schema_param_names(const KernelSchema& schema) {
  std::vector<std::string> names;
  for (const auto& p : schema.params()) names.push_back(p.name);
  return names;
}

// Where `entry` goes on a newest-first stack: above every implementation
// of its own source or a weaker one, below those of a stronger source.
template <typename Entry>
void insert_by_precedence(std::vector<Entry>& stack, Entry entry) {
  auto at = stack.begin();
  while (at != stack.end() && at->impl->source > entry.impl->source) ++at;
  stack.insert(at, std::move(entry));
}

}  // namespace

std::string_view to_string(ImplSource source) {
  switch (source) {
    case ImplSource::bundled_plugin: return "bundled plugin";
    case ImplSource::user_plugin: return "user plugin";
    case ImplSource::host: return "host override";
  }
  return "unknown";
}

ImplRecord::~ImplRecord() {
  if (c.destroy != nullptr) c.destroy(c.user_data);
}

std::shared_ptr<ImplRecord> ImplRecord::from_c(
    const jw_kernel_impl& impl, std::string origin,
    std::shared_ptr<void> keep_alive) {
  if (impl.struct_size < offsetof(jw_kernel_impl, describe)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "kernel implementation from {}: struct_size {} is too small", origin,
         impl.struct_size);
  }
  const auto text = [](const char* s) {
    return std::string(s != nullptr ? s : "");
  };
  if (impl.kernel_name == nullptr || *impl.kernel_name == '\0') {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "kernel implementation from {} has no kernel name", origin);
  }
  if (impl.platform == nullptr || *impl.platform == '\0') {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation of {} from {} names no platform", impl.kernel_name,
         origin);
  }
  if (impl.compile == nullptr || impl.launch == nullptr) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation of {} from {} lacks compile or launch",
         impl.kernel_name, origin);
  }
  // Appended fields (jitwarm.h R3): read only inside the writer's size.
  const auto has_field = [&](std::size_t end) {
    return impl.struct_size >= end;
  };
  const bool has_prepare =
      has_field(offsetof(jw_kernel_impl, release_prepared) +
                sizeof(impl.release_prepared)) &&
      (impl.prepare != nullptr || impl.launch_prepared != nullptr ||
       impl.release_prepared != nullptr);
  if (has_prepare &&
      (impl.prepare == nullptr || impl.launch_prepared == nullptr ||
       impl.release_prepared == nullptr)) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation of {} from {} sets some of prepare, launch_prepared "
         "and release_prepared: it needs all three or none",
         impl.kernel_name, origin);
  }
  constexpr uint32_t kKnownImplFlags = JW_IMPL_COMPILES_NOTHING;
  if (has_field(offsetof(jw_kernel_impl, flags) + sizeof(impl.flags)) &&
      (impl.flags & ~kKnownImplFlags) != 0) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation of {} from {} has unknown flags {:#x}",
         impl.kernel_name, origin, impl.flags & ~kKnownImplFlags);
  }
  if (impl.num_param_names > 0 && impl.param_names == nullptr) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation of {} from {}: param_names is null", impl.kernel_name,
         origin);
  }
  auto record = std::make_shared<ImplRecord>();
  record->kernel_name = impl.kernel_name;
  record->platform = impl.platform;
  record->impl_name = text(impl.impl_name);
  if (record->impl_name.empty()) record->impl_name = record->platform + "-impl";
  record->origin = std::move(origin);
  for (uint32_t i = 0; i < impl.num_param_names; ++i) {
    if (impl.param_names[i] == nullptr) {
      fail(JW_ERROR_INVALID_ARGUMENT,
           "implementation of {} from {}: parameter name {} is null",
           record->kernel_name, record->origin, i);
    }
    record->param_names.emplace_back(impl.param_names[i]);
  }
  for (const auto& n : record->param_names)
    record->param_name_ptrs.push_back(n.c_str());
  // Copy only the fields inside the writer's struct_size (rule R3).
  jw_kernel_impl& own = record->plugin;
  std::memcpy(&own, &impl,
              std::min<std::size_t>(impl.struct_size, sizeof(jw_kernel_impl)));
  own.struct_size = sizeof(jw_kernel_impl);
  own.kernel_name = record->kernel_name.c_str();
  own.platform = record->platform.c_str();
  own.impl_name = record->impl_name.c_str();
  own.param_names = record->param_name_ptrs.empty()
                        ? nullptr
                        : record->param_name_ptrs.data();
  own.num_param_names = static_cast<uint32_t>(record->param_name_ptrs.size());
  record->c = guarded_impl_table(*record);
  record->keep_alive = std::move(keep_alive);
  return record;
}

ImplementationInfo ImplRecord::info(bool pending) const {
  return ImplementationInfo{impl_name, platform, origin, pending,
                            std::string(to_string(source))};
}

void bind_to_schema(ImplRecord& impl, const KernelSchema& schema) {
  const auto& params = schema.params();
  impl.schema_index.clear();
  if (impl.param_names.empty()) {
    impl.positional = true;
    for (uint32_t i = 0; i < params.size(); ++i) impl.schema_index.push_back(i);
    return;
  }
  std::vector<std::string> unknown;
  std::set<std::string> seen;
  std::vector<std::string> duplicates;
  for (const auto& name : impl.param_names) {
    if (schema.index_of(name) < 0) unknown.push_back(name);
    if (!seen.insert(name).second) duplicates.push_back(name);
  }
  const auto schema_names = join(schema_param_names(schema));
  if (!duplicates.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation '{}' of {} (from {}) names parameter(s) twice: {}",
         impl.impl_name, schema.name(), impl.origin, join(duplicates));
  }
  if (unknown.size() == impl.param_names.size() &&
      impl.param_names.size() == params.size()) {
    // None of its names is the schema's: it takes arguments by position.
    impl.positional = true;
    for (uint32_t i = 0; i < params.size(); ++i) impl.schema_index.push_back(i);
    return;
  }
  if (!unknown.empty()) {
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation '{}' of {} (from {}) has unexpected argument name(s) "
         "{}; the schema's parameters are: {}",
         impl.impl_name, schema.name(), impl.origin, join(unknown),
         schema_names);
  }
  if (impl.param_names.size() != params.size()) {
    std::vector<std::string> missing;
    for (const auto& p : params) {
      if (seen.count(p.name) == 0) missing.push_back(p.name);
    }
    fail(JW_ERROR_INVALID_ARGUMENT,
         "implementation '{}' of {} (from {}) does not take parameter(s) {}; "
         "the schema's parameters are: {}",
         impl.impl_name, schema.name(), impl.origin, join(missing),
         schema_names);
  }
  bool in_schema_order = true;
  for (const auto& name : impl.param_names) {
    const auto index = static_cast<uint32_t>(schema.index_of(name));
    in_schema_order = in_schema_order && index == impl.schema_index.size();
    impl.schema_index.push_back(index);
  }
  // Names in the schema's own order (the built-in kernels') take the
  // arguments as they come: a launch copies nothing into a new order.
  impl.positional = in_schema_order;
}

const KernelState::Platform* KernelState::find(
    std::string_view platform) const {
  for (const auto& p : platforms) {
    if (p.name == platform && !p.stack.empty()) return &p;
  }
  return nullptr;
}

const ImplRecord* KernelState::winner(std::string_view platform) const {
  const Platform* p = find(platform);
  return p != nullptr ? p->stack.front().get() : nullptr;
}

std::string KernelState::platform_list() const {
  std::vector<std::string> names;
  for (const auto& p : platforms) {
    if (!p.stack.empty()) names.push_back(p.name);
  }
  return names.empty() ? std::string("none") : join(names);
}

StateReaders::Guard StateReaders::enter() const {
  const std::size_t stripe = thread_stripe(kStripes);
  for (;;) {
    const uint64_t epoch = epoch_.load(std::memory_order_seq_cst);
    std::atomic<int64_t>& count = counts_[epoch & 1][stripe].value;
    count.fetch_add(1, std::memory_order_seq_cst);
    // Counted under the epoch still current: a writer that advances from
    // here on sees this reader (the seq_cst order of the increment and its
    // own load of the counter). Otherwise count again under the new one.
    if (epoch_.load(std::memory_order_seq_cst) == epoch) return Guard(&count);
    count.fetch_sub(1, std::memory_order_seq_cst);
  }
}

bool StateReaders::no_readers_of(uint64_t epoch) const {
  int64_t readers = 0;
  for (const Count& c : counts_[epoch & 1]) {
    readers += c.value.load(std::memory_order_seq_cst);
  }
  return readers == 0;
}

Registry::~Registry() {
  // No reader remains (handles keep the runtime, and so this, alive).
  // Unpublish first, then drop the states before the bookkeeping so
  // implementations are destroyed (their destroy callbacks run) while their
  // libraries are loaded: each ImplRecord holds its library, so order within
  // is already right.
  for (auto& [name, kernel] : kernels_) kernel.slot->state.store(nullptr);
  retired_.clear();
  for (auto& [name, kernel] : kernels_) kernel.published.reset();
}

void Registry::collect_locked(Garbage& garbage) noexcept {
  try {
    // Two steps at most: the first frees what was retired before the
    // current epoch and advances; the second frees what was retired in it
    // (with no reader in flight, what the caller just replaced).
    for (int step = 0; step < 2; ++step) {
      const uint64_t epoch = readers_.epoch();
      if (epoch > 0 && !readers_.no_readers_of(epoch - 1)) break;
      // Readers of epoch - 1 and before are gone: a state retired before
      // this epoch can be held by none.
      const auto freeable = std::stable_partition(
          retired_.begin(), retired_.end(),
          [&](const Retired& r) { return r.epoch >= epoch; });
      garbage.states.reserve(
          garbage.states.size() +
          static_cast<std::size_t>(retired_.end() - freeable));
      for (auto it = freeable; it != retired_.end(); ++it) {
        garbage.states.push_back(std::move(it->state));
      }
      retired_.erase(freeable, retired_.end());
      readers_.advance();
    }
  } catch (...) {
    // Out of memory: what was not handed over stays retired for a later try.
  }
  retired_pending_.store(!retired_.empty(), std::memory_order_relaxed);
}

void Registry::collect_retired() {
  if (!retired_pending_.load(std::memory_order_relaxed)) return;
  Garbage garbage;  // destroyed after the lock is released
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) collect_locked(garbage);
}

std::size_t Registry::retired_count() const {
  std::lock_guard lock(mutex_);
  return retired_.size();
}

void Registry::check_schema_is_new(const std::string& name,
                                   const std::string& origin) const {
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(name);
  if (it != kernels_.end() && it->second.schema) {
    fail(JW_ERROR_ALREADY_EXISTS,
         "kernel schema {} is defined twice: first by {}, again by {}", name,
         it->second.schema->origin(), origin);
  }
}

Registry::Kernel& Registry::kernel_locked(std::string_view name) {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    it = kernels_.emplace(std::string(name), Kernel{}).first;
    it->second.slot = std::make_shared<KernelSlot>();
    it->second.slot->name = std::string(name);
  }
  return it->second;
}

std::vector<DroppedImpl> Registry::define_schema(KernelSchema schema) {
  Garbage garbage;  // destroyed after the lock is released
  // Implementations that arrived before their schema; those that do not
  // bind to it are dropped with this, after the lock is released.
  std::vector<Entry> waiting;
  std::vector<DroppedImpl> dropped;
  std::lock_guard lock(mutex_);
  auto existing = kernels_.find(schema.name());
  if (existing != kernels_.end() && existing->second.schema) {
    fail(JW_ERROR_ALREADY_EXISTS,
         "kernel schema {} is defined twice: first by {}, again by {}",
         schema.name(), existing->second.schema->origin(), schema.origin());
  }
  Kernel& kernel = kernel_locked(schema.name());
  kernel.schema = std::make_shared<const KernelSchema>(std::move(schema));
  // Implementations that arrived before their schema join it now, in the
  // order they were registered.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->impl->kernel_name == kernel.schema->name()) {
      waiting.push_back(std::move(*it));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& entry : waiting) {
    try {
      bind_to_schema(*entry.impl, *kernel.schema);
      insert_by_precedence(kernel.stacks[entry.impl->platform], entry);
    } catch (const Error& e) {
      // Its plugin's load record says so too (PluginLoadHistory::note_dropped).
      logger_.log(JW_LOG_WARNING,
                  fmt::format("dropping implementation: {}", e.what()));
      dropped.push_back(DroppedImpl{
          entry.impl->origin,
          entry.impl->kernel_name + " [" + entry.impl->platform + "]",
          e.what()});
    }
  }
  publish_locked(kernel);
  collect_locked(garbage);
  return dropped;
}

uint64_t Registry::add(std::shared_ptr<ImplRecord> impl, bool allow_pending) {
  // `impl`, when refused, is destroyed after the lock is released too.
  Garbage garbage;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  const uint64_t token = add_locked(impl, allow_pending);
  collect_locked(garbage);
  return token;
}

uint64_t Registry::add_locked(std::shared_ptr<ImplRecord>& impl,
                              bool allow_pending) {
  const uint64_t token = next_token_++;
  auto it = kernels_.find(impl->kernel_name);
  if (it == kernels_.end() || !it->second.schema) {
    if (!allow_pending) {
      fail(JW_ERROR_NOT_FOUND, "unknown kernel '{}' (known kernels: {})",
           impl->kernel_name, join([&] {
             std::vector<std::string> names;
             for (const auto& [n, k] : kernels_) {
               if (k.schema) names.push_back(n);
             }
             return names;
           }()));
    }
    pending_.push_back(Entry{token, std::move(impl)});
    return token;
  }
  Kernel& kernel = it->second;
  bind_to_schema(*impl, *kernel.schema);
  auto& stack = kernel.stacks[impl->platform];
  if (!stack.empty()) {
    const ImplRecord& previous = *stack.front().impl;
    if (previous.source > impl->source) {
      logger_.log(
          JW_LOG_INFO,
          fmt::format("{} on {}: '{}' from {} ({}) stays below '{}' "
                      "from {} ({})",
                      kernel.schema->name(), impl->platform, impl->impl_name,
                      impl->origin, to_string(impl->source), previous.impl_name,
                      previous.origin, to_string(previous.source)));
    } else {
      logger_.log(
          JW_LOG_WARNING,
          fmt::format("{} on {}: '{}' from {} overrides '{}' from {}",
                      kernel.schema->name(), impl->platform, impl->impl_name,
                      impl->origin, previous.impl_name, previous.origin));
    }
  }
  insert_by_precedence(stack, Entry{token, std::move(impl)});
  publish_locked(kernel);
  return token;
}

std::vector<uint64_t> Registry::add_batch(
    std::vector<std::shared_ptr<ImplRecord>> impls) {
  Garbage garbage;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  // Validate everything first so a bad entry registers nothing.
  for (const auto& impl : impls) {
    auto it = kernels_.find(impl->kernel_name);
    if (it == kernels_.end() || !it->second.schema) {
      std::vector<std::string> names;
      for (const auto& [n, k] : kernels_) {
        if (k.schema) names.push_back(n);
      }
      fail(JW_ERROR_NOT_FOUND,
           "register_kernels: unknown kernel '{}' (known kernels: {})",
           impl->kernel_name, join(names));
    }
    bind_to_schema(*impl, *it->second.schema);
  }
  std::vector<uint64_t> tokens;
  for (auto& impl : impls) tokens.push_back(add_locked(impl, false));
  collect_locked(garbage);
  return tokens;
}

void Registry::refresh(std::string_view name) {
  Garbage garbage;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  const auto it = kernels_.find(name);
  if (it == kernels_.end() || !it->second.published) return;
  publish_locked(it->second);
  collect_locked(garbage);
}

void Registry::remove(uint64_t token) {
  Garbage garbage;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  remove_locked(token, garbage);
  collect_locked(garbage);
}

void Registry::remove_batch(const std::vector<uint64_t>& tokens) {
  Garbage garbage;  // destroyed after the lock is released
  std::lock_guard lock(mutex_);
  for (uint64_t t : tokens) remove_locked(t, garbage);
  collect_locked(garbage);
}

void Registry::remove_locked(uint64_t token, Garbage& garbage) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->token == token) {
      garbage.impls.push_back(std::move(it->impl));
      pending_.erase(it);
      return;
    }
  }
  for (auto& [name, kernel] : kernels_) {
    for (auto& [platform, stack] : kernel.stacks) {
      for (std::size_t i = 0; i < stack.size(); ++i) {
        if (stack[i].token != token) continue;
        const bool was_winner = i == 0;
        const std::string removed = stack[i].impl->impl_name;
        stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(i));
        if (was_winner && !stack.empty()) {
          logger_.log(
              JW_LOG_INFO,
              fmt::format("{} on {}: '{}' removed; '{}' from {} restored", name,
                          platform, removed, stack.front().impl->impl_name,
                          stack.front().impl->origin));
        }
        publish_locked(kernel);
        return;
      }
    }
  }
}

void Registry::publish_locked(Kernel& kernel) {
  auto state = std::make_unique<KernelState>();
  state->schema = kernel.schema;
  for (const auto& [platform, stack] : kernel.stacks) {
    KernelState::Platform p;
    p.name = platform;
    for (const auto& e : stack) p.stack.push_back(e.impl);
    p.prepared.reset(new PreparedLaunchTable());
    state->platforms.push_back(std::move(p));
  }
  // Room first: once the new state is published, retiring the old one must
  // not fail (a failure would free a state readers may hold).
  if (kernel.published && retired_.size() == retired_.capacity()) {
    retired_.reserve(std::max<std::size_t>(8, 2 * retired_.capacity()));
  }
  kernel.slot->state.store(state.get(), std::memory_order_seq_cst);
  // I2: readers that loaded the old state entered in this epoch or before.
  if (kernel.published) {
    retired_.push_back(Retired{std::move(kernel.published), readers_.epoch()});
  }
  kernel.published = std::move(state);
}

std::shared_ptr<KernelSlot> Registry::slot(std::string_view name) const {
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(name);
  if (it == kernels_.end() || !it->second.schema) return nullptr;
  return it->second.slot;
}

std::shared_ptr<KernelSlot> Registry::resolve(std::string_view typed) const {
  if (auto exact = slot(typed)) return exact;
  // Slots are never removed (I3): the name resolved has one.
  return slot(resolve_kernel_name(typed, kernel_names()));
}

std::shared_ptr<KernelSlot> Registry::slot_of_key(const CompileKey& key,
                                                  std::string_view what) const {
  if (auto exact = slot(key.kernel_name())) return exact;
  std::string full_name;
  try {
    full_name = resolve(key.kernel_name())->name;
  } catch (const Error& e) {
    fail(e.status(), "{}: key {}: {}", what, key.text(), e.what());
  }
  fail(JW_ERROR_INVALID_ARGUMENT,
       "{}: key {} names its kernel '{}' by its short name; a key holds the "
       "full name '{}'",
       what, key.text(), key.kernel_name(), full_name);
}

std::vector<std::string> Registry::kernel_names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, kernel] : kernels_) {
    if (kernel.schema) names.push_back(name);
  }
  return names;
}

std::vector<ImplementationInfo> Registry::implementations(
    std::string_view name) const {
  std::lock_guard lock(mutex_);
  std::vector<ImplementationInfo> out;
  auto it = kernels_.find(name);
  if (it != kernels_.end()) {
    for (const auto& [platform, stack] : it->second.stacks) {
      for (const auto& e : stack) out.push_back(e.impl->info());
    }
  }
  for (const auto& e : pending_) {
    if (e.impl->kernel_name == name) out.push_back(e.impl->info(true));
  }
  return out;
}

std::vector<ImplementationInfo> Registry::pending() const {
  std::lock_guard lock(mutex_);
  std::vector<ImplementationInfo> out;
  for (const auto& e : pending_) {
    auto info = e.impl->info(true);
    info.impl_name = e.impl->kernel_name + " / " + info.impl_name;
    out.push_back(info);
  }
  return out;
}

KernelExplanation Registry::explain(std::string_view name) const {
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(name);
  if (it == kernels_.end() || !it->second.schema) {
    fail(JW_ERROR_NOT_FOUND, "unknown kernel '{}'", name);
  }
  KernelExplanation out;
  out.kernel_name = std::string(name);
  out.schema_origin = it->second.schema->origin();
  for (const auto& [platform, stack] : it->second.stacks) {
    if (stack.empty()) continue;
    PlatformExplanation p;
    p.platform = platform;
    p.winner = stack.front().impl->info();
    for (std::size_t i = 1; i < stack.size(); ++i)
      p.replaced.push_back(stack[i].impl->info());
    out.platforms.push_back(std::move(p));
  }
  return out;
}

}  // namespace jitwarm::detail

namespace jitwarm {

std::string KernelExplanation::to_text() const {
  std::string out =
      fmt::format("{}\n  schema defined by {}\n", kernel_name, schema_origin);
  if (platforms.empty()) out += "  no implementation on any platform\n";
  for (const auto& p : platforms) {
    out +=
        fmt::format("  {}: '{}' from {} ({})\n", p.platform, p.winner.impl_name,
                    p.winner.origin, p.winner.precedence);
    for (const auto& r : p.replaced) {
      // Why the one above wins: its source (P10), or it came later.
      const std::string why =
          r.precedence == p.winner.precedence
              ? fmt::format("registered earlier; among {}s the newest wins",
                            r.precedence)
              : fmt::format("a {} beats a {} whatever the load order",
                            p.winner.precedence, r.precedence);
      out += fmt::format("      replaces '{}' from {} ({}: {})\n", r.impl_name,
                         r.origin, r.precedence, why);
    }
  }
  return out;
}

}  // namespace jitwarm
