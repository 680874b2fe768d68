// plan_launch and argument packing: the host half of every kernel's launch
// rule, for any kernel descriptor (the device half is in the kernel's
// source): the checks, grid, block, shared memory and extra arguments of
// the descriptor's [launch] section, then the kernel parameters.
#include "launch_plan.hpp"

#include <jitwarm/plugin.hpp>

#include "kernel_expression.hpp"
#include "kernel_instantiation.hpp"
#include "key_params.hpp"
#include "launch_program.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace jitwarm::gpu {

std::string LaunchGeometry::text() const {
  // Appends rather than `"(" + ...`, which trips GCC 12's false -Wrestrict
  // (GCC bug 105329) in optimized builds.
  auto dims = [](const Dim3& d) {
    std::string text("(");
    text.append(std::to_string(d.x)).append(", ").append(std::to_string(d.y));
    text.append(", ").append(std::to_string(d.z)).append(")");
    return text;
  };
  std::string text = "grid " + dims(grid) + " block " + dims(block);
  if (shared_memory_bytes != 0) {
    text += " shared " + std::to_string(shared_memory_bytes) + " B";
  }
  return text;
}

// --- KernelArguments -------------------------------------------------------

KernelArguments::KernelArguments(KernelArguments&& other) noexcept
    : count_(other.count_), device_(other.device_) {
  for (std::size_t i = 0; i < count_; ++i) {
    slots_[i] = other.slots_[i];
    sizes_[i] = other.sizes_[i];
    // The pointers must name this object's slots, not the moved-from ones.
    pointers_[i] = &slots_[i];
  }
}

void KernelArguments::too_many_parameters() {
  throw plugin::PluginError(JW_ERROR_INTERNAL, "too many kernel parameters");
}

void KernelArguments::append_extra(const LaunchPlan& plan) {
  for (uint32_t i = 0; i < plan.extra_count; ++i) {
    const ExtraArgument& extra = plan.extra[i];
    switch (extra.type) {
      case JW_INT_I32: push(static_cast<int32_t>(extra.value)); break;
      case JW_INT_I64: push(extra.value); break;
      case JW_INT_U64: push(static_cast<uint64_t>(extra.value)); break;
    }
  }
}

// --- ArgumentPacking ---------------------------------------------------------

ArgumentPacking::ArgumentPacking(const KeyParams& params)
    : key_text_(params.text()) {
  const jw_compile_key_view& key = params.key();
  bool seen_tensor = false;
  for (uint32_t i = 0; i < key.num_params; ++i) {
    Slot slot = Slot::skip;
    switch (params.param(i).kind) {
      case JW_PARAM_TENSOR:
        slot = Slot::pointer;
        if (!seen_tensor) first_tensor_ = i;
        seen_tensor = true;
        break;
      case JW_PARAM_INT: {
        const jw_int_type type = params.int_spec(i).type;
        slot = type == JW_INT_I32   ? Slot::i32
               : type == JW_INT_I64 ? Slot::i64
                                    : Slot::u64;
        break;
      }
      case JW_PARAM_FLOAT:
        slot = params.float_type(i) == JW_FLOAT_F64 ? Slot::f64 : Slot::f32;
        break;
      case JW_PARAM_SCALAR:
        if (params.scalar_kind(i) == JW_SCALAR_FLOAT) {
          slot = params.float_type(i) == JW_FLOAT_F64 ? Slot::f64 : Slot::f32;
        } else {
          const jw_int_type type = params.int_spec(i).type;
          slot = type == JW_INT_I32   ? Slot::i32
                 : type == JW_INT_I64 ? Slot::i64
                                      : Slot::u64;
        }
        break;
      case JW_PARAM_CONSTEXPR: break;  // baked into the binary
    }
    if (i >= slots_.size()) {
      throw plugin::PluginError(
          JW_ERROR_INTERNAL,
          std::string(params.text()) + ": too many kernel parameters");
    }
    slots_[i] = slot;
  }
  if (!seen_tensor) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": no tensor argument names a device");
  }
  count_ = key.num_params;
}

int32_t ArgumentPacking::device(std::span<const jw_arg_value> args) const {
  const int32_t device = args[first_tensor_].value.tensor->device_index;
  if (device < 0) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              key_text_ +
                                  ": tensors are in host memory; a GPU "
                                  "launch needs device memory");
  }
  return device;
}

KernelArguments ArgumentPacking::pack(std::span<const jw_arg_value> args,
                                      const LaunchPlan& plan) const {
  KernelArguments packed;
  const auto integer = [&](uint32_t i) -> uint64_t {
    const jw_scalar& s = args[i].value.scalar;
    return s.kind == JW_SCALAR_UINT ? s.value.u
                                    : static_cast<uint64_t>(s.value.i);
  };
  const auto floating = [&](uint32_t i) {
    const jw_scalar& s = args[i].value.scalar;
    return s.kind == JW_SCALAR_FLOAT  ? s.value.f
           : s.kind == JW_SCALAR_UINT ? static_cast<double>(s.value.u)
                                      : static_cast<double>(s.value.i);
  };
  for (uint32_t i = 0; i < count_; ++i) {
    switch (slots_[i]) {
      case Slot::skip: break;
      case Slot::pointer: packed.push(args[i].value.tensor->data); break;
      case Slot::i32: packed.push(static_cast<int32_t>(integer(i))); break;
      case Slot::i64: packed.push(static_cast<int64_t>(integer(i))); break;
      case Slot::u64: packed.push(integer(i)); break;
      case Slot::f32: packed.push(static_cast<float>(floating(i))); break;
      case Slot::f64: packed.push(floating(i)); break;
    }
  }
  packed.set_device(args[first_tensor_].value.tensor->device_index);
  packed.append_extra(plan);
  return packed;
}

// --- plan_launch -------------------------------------------------------------

LaunchPlan plan_launch(const KernelInstantiation& instantiation,
                       const jw_compile_key_view& key,
                       std::span<const jw_arg_value> args,
                       const DeviceLimits& limits) {
  return plan_launch(instantiation, KeyParams(key, *instantiation.descriptor),
                     args, limits);
}

namespace {

// LaunchProgram slots: launch let i in slot i (as the program reads them),
// then block, grid, shared memory and extra arguments.
constexpr uint32_t kBlockSlot = kMaxLaunchValues;
constexpr uint32_t kGridSlot = kBlockSlot + 3;
constexpr uint32_t kSharedMemorySlot = kGridSlot + 3;
constexpr uint32_t kExtraSlot = kSharedMemorySlot + 1;
static_assert(kExtraSlot + LaunchPlan::kMaxExtra <= LaunchProgram::kMaxSlots);

}  // namespace

LaunchPlanCache::LaunchPlanCache() = default;
LaunchPlanCache::~LaunchPlanCache() = default;

void LaunchPlanCache::compile(const KernelDescriptor& d,
                              const LaunchInputs& in) {
  auto program = std::make_unique<LaunchProgram>();
  bool compiled = true;
  const auto output = [&](const KernelExpression& e, Field field, uint8_t index,
                          uint32_t slot) {
    if (!e.varies_per_launch()) return;
    compiled = compiled && program->store(e, in, slot);
    outputs_[output_count_++] = Output{field, index, slot};
  };
  for (const DescriptorCheck& check : d.launch_checks) {
    if (check.expression.varies_per_launch()) {
      compiled = compiled && program->require(check.expression, in);
    }
  }
  for (std::size_t i = 0; i < d.launch_values.size(); ++i) {
    const KernelExpression& e = d.launch_values[i].expression;
    if (e.varies_per_launch()) {
      compiled = compiled && program->store(e, in, static_cast<uint32_t>(i));
    }
  }
  for (uint8_t axis = 0; axis < 3; ++axis) {
    output(d.block[axis], Field::block, axis, kBlockSlot + axis);
    block_varies_ = block_varies_ || d.block[axis].varies_per_launch();
    output(d.grid[axis], Field::grid, axis, kGridSlot + axis);
  }
  if (d.shared_memory) {
    output(*d.shared_memory, Field::shared_memory, 0, kSharedMemorySlot);
  }
  for (std::size_t k = 0; k < d.extra_args.size(); ++k) {
    output(d.extra_args[k].expression, Field::extra, static_cast<uint8_t>(k),
           kExtraSlot + static_cast<uint32_t>(k));
  }
  memoized_ = compiled && program->index_inputs(kMaxInputWords);
  program_ = std::move(program);
  fast_ = compiled;
}

LaunchPlan plan_launch(const KernelInstantiation& instantiation,
                       const KeyParams& params,
                       std::span<const jw_arg_value> args,
                       const DeviceLimits& limits, LaunchPlanCache* cache) {
  if (cache != nullptr && cache->ready_.load(std::memory_order_acquire) &&
      cache->fast_ && args.size() == params.key().num_params) {
    LaunchPlan plan;
    if (cache->plan_varying(args, limits, plan)) return plan;
  }
  return plan_in_full(instantiation, params, args, limits, cache);
}

// Every expression evaluated (what the cache holds taken from it), each
// failure said; out of line, so a launch the cache plans does not pay for
// its frame.
[[gnu::noinline]] LaunchPlan plan_in_full(
    const KernelInstantiation& instantiation, const KeyParams& params,
    std::span<const jw_arg_value> args, const DeviceLimits& limits,
    LaunchPlanCache* cache) {
  const KernelDescriptor& d = *instantiation.descriptor;
  // What does not vary per launch comes from the cache once it is filled.
  const bool cached =
      cache != nullptr && cache->ready_.load(std::memory_order_acquire);
  const auto known = [&](const KernelExpression& e) {
    return cached && !e.varies_per_launch();
  };
  if (args.size() != params.key().num_params) {
    throw plugin::PluginError(
        JW_ERROR_INVALID_ARGUMENT,
        std::string(params.text()) + ": wrong number of launch arguments");
  }
  // Launch values live on the stack (the descriptor reader caps their
  // number), so a launch allocates nothing.
  std::array<ExprSlot, kMaxLaunchValues> values;
  LaunchInputs in;
  in.args = args;
  in.limits = &limits;
  in.compile_lets = instantiation.values;
  LaunchPlan plan;
  int line = 0;
  // The failure, or empty; built only when something fails.
  const auto evaluate = [&]() -> std::string {
    for (const DescriptorCheck& check : d.launch_checks) {
      if (known(check.expression)) continue;  // it passed, and always will
      line = check.line;
      if (!check.expression.boolean(in)) {
        return "launch check '" + check.expression.text() +
               "' failed: " + check.expression.values(in);
      }
    }
    for (std::size_t i = 0; i < d.launch_values.size(); ++i) {
      const DescriptorValue& v = d.launch_values[i];
      line = v.line;
      if (known(v.expression)) {
        values[i] = cache->lets_[i];
      } else if (v.expression.type() == ExprType::boolean) {
        values[i].boolean = v.expression.boolean(in);
      } else {
        values[i].integer = v.expression.integer(in);
      }
      in.lets = std::span<const ExprSlot>(values.data(), i + 1);
    }
    const auto dimension = [&](const KernelExpression& e, const char* what,
                               uint32_t* out,
                               const uint32_t* from_cache) -> std::string {
      if (known(e)) {  // in range: it was checked when the cache was filled
        *out = *from_cache;
        return {};
      }
      const int64_t v = e.integer(in);
      if (v < 0 || v > UINT32_MAX) {
        return std::string(what) + " = '" + e.text() +
               "' = " + std::to_string(v) + " is outside [0, 2^32)";
      }
      *out = static_cast<uint32_t>(v);
      return {};
    };
    static constexpr const char* kBlock[] = {"block.x", "block.y", "block.z"};
    static constexpr const char* kGrid[] = {"grid.x", "grid.y", "grid.z"};
    uint32_t* block[] = {&plan.geometry.block.x, &plan.geometry.block.y,
                         &plan.geometry.block.z};
    uint32_t* grid[] = {&plan.geometry.grid.x, &plan.geometry.grid.y,
                        &plan.geometry.grid.z};
    const uint32_t max_grid[] = {limits.max_grid.x, limits.max_grid.y,
                                 limits.max_grid.z};
    line = 0;
    for (int axis = 0; axis < 3; ++axis) {
      const Dim3 no_cache;
      const Dim3& from_block =
          cache != nullptr ? cache->plan_.geometry.block : no_cache;
      const Dim3& from_grid =
          cache != nullptr ? cache->plan_.geometry.grid : no_cache;
      const uint32_t cached_block[] = {from_block.x, from_block.y,
                                       from_block.z};
      const uint32_t cached_grid[] = {from_grid.x, from_grid.y, from_grid.z};
      if (std::string e = dimension(d.block[axis], kBlock[axis], block[axis],
                                    &cached_block[axis]);
          !e.empty()) {
        return e;
      }
      if (std::string e = dimension(d.grid[axis], kGrid[axis], grid[axis],
                                    &cached_grid[axis]);
          !e.empty()) {
        return e;
      }
      if (*block[axis] == 0) return std::string(kBlock[axis]) + " is 0";
      if (*grid[axis] > max_grid[axis]) {
        return std::string(kGrid[axis]) + " = " + std::to_string(*grid[axis]) +
               " exceeds the device's " + std::to_string(max_grid[axis]);
      }
    }
    const uint64_t threads = uint64_t{plan.geometry.block.x} *
                             plan.geometry.block.y * plan.geometry.block.z;
    if (threads > limits.max_threads_per_block) {
      return "the block has " + std::to_string(threads) +
             " threads; the loaded function allows " +
             std::to_string(limits.max_threads_per_block);
    }
    if (d.shared_memory) {
      uint32_t bytes = 0;
      const uint32_t cached_bytes =
          cache != nullptr ? cache->plan_.geometry.shared_memory_bytes : 0;
      if (std::string e = dimension(*d.shared_memory, "shared_memory", &bytes,
                                    &cached_bytes);
          !e.empty()) {
        return e;
      }
      plan.geometry.shared_memory_bytes = bytes;
    }
    for (const DescriptorExtraArg& extra : d.extra_args) {
      line = extra.line;
      const std::size_t k = plan.extra_count++;
      plan.extra[k] = ExtraArgument{
          extra.type, known(extra.expression) ? cache->plan_.extra[k].value
                                              : extra.expression.integer(in)};
    }
    return {};
  };
  std::string failure;
  try {
    failure = evaluate();
  } catch (const plugin::PluginError& error) {
    if (error.status() != JW_ERROR_INVALID_ARGUMENT) throw;
    failure = error.what();
  }
  if (!failure.empty()) {
    throw plugin::PluginError(JW_ERROR_INVALID_ARGUMENT,
                              std::string(params.text()) + ": " + failure +
                                  " (" + d.where(line) + ")");
  }
  // A launch that planned everything itself publishes what does not vary:
  // the first to claim the cache writes it, then sets ready_.
  if (cache != nullptr && !cached &&
      !cache->claimed_.exchange(true, std::memory_order_acq_rel)) {
    std::copy_n(values.begin(), d.launch_values.size(), cache->lets_.begin());
    // What does not vary in it is every later launch's (what varies is
    // overwritten by each launch's own).
    cache->plan_ = plan;
    cache->compile(d, in);
    cache->ready_.store(true, std::memory_order_release);
  }
  return plan;
}

bool LaunchPlanCache::plan_varying(std::span<const jw_arg_value> args,
                                   const DeviceLimits& limits,
                                   LaunchPlan& plan) const {
  static_assert(std::is_trivially_copyable_v<LaunchPlan>);
  std::array<uint64_t, kMaxInputWords> read;
  const std::span<uint64_t> inputs(read.data(), program_->input_words());
  const bool memoizable = memoized_ && program_->read_inputs(args, inputs);
  std::array<uint64_t, kPlanWords> words{};
  if (memoizable && last_plan_.recall(inputs, words)) {
    std::memcpy(static_cast<void*>(&plan), words.data(), sizeof(LaunchPlan));
    return true;
  }
  std::array<int64_t, LaunchProgram::kMaxSlots> slots;
  if (!program_->run(args, slots)) return false;
  std::array<int64_t, kMaxOutputs> values;
  for (uint32_t k = 0; k < output_count_; ++k) {
    values[k] = slots[outputs_[k].slot];
  }
  if (!apply({values.data(), output_count_}, limits, plan)) return false;
  if (memoizable) {
    std::memcpy(words.data(), &plan, sizeof(LaunchPlan));
    last_plan_.remember(inputs, words);
  }
  return true;
}

bool LaunchPlanCache::apply(std::span<const int64_t> values,
                            const DeviceLimits& limits,
                            LaunchPlan& plan) const {
  plan = plan_;
  uint32_t* const block[] = {&plan.geometry.block.x, &plan.geometry.block.y,
                             &plan.geometry.block.z};
  uint32_t* const grid[] = {&plan.geometry.grid.x, &plan.geometry.grid.y,
                            &plan.geometry.grid.z};
  const uint32_t max_grid[] = {limits.max_grid.x, limits.max_grid.y,
                               limits.max_grid.z};
  for (uint32_t k = 0; k < output_count_; ++k) {
    const Output& o = outputs_[k];
    const int64_t v = values[k];
    switch (o.field) {
      case Field::block:
        if (v <= 0 || v > UINT32_MAX) return false;
        *block[o.index] = static_cast<uint32_t>(v);
        break;
      case Field::grid:
        if (v < 0 || v > max_grid[o.index]) return false;
        *grid[o.index] = static_cast<uint32_t>(v);
        break;
      case Field::shared_memory:
        if (v < 0 || v > UINT32_MAX) return false;
        plan.geometry.shared_memory_bytes = static_cast<uint32_t>(v);
        break;
      case Field::extra: plan.extra[o.index].value = v; break;
    }
  }
  if (block_varies_) {
    const uint64_t threads = uint64_t{plan.geometry.block.x} *
                             plan.geometry.block.y * plan.geometry.block.z;
    if (threads > limits.max_threads_per_block) return false;
  }
  return true;
}

}  // namespace jitwarm::gpu
