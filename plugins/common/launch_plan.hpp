// Launch planning and kernel-argument packing, shared by the CUDA and HIP
// plugins: from a compile key, its instantiation and the launch arguments to
// the grid/block/shared-memory of a launch and the `void**` parameter array
// that both cuLaunchKernel and hipModuleLaunchKernel take.
//
// The packing rule is generic: the kernel's function parameters are the
// schema's non-constexpr parameters in schema order, then the descriptor's
// extra arguments; a tensor is its device pointer, an integer exactly the
// C++ type the key chose (i32 -> int32_t, i64 -> int64_t, u64 -> uint64_t),
// a float fp32 or fp64 as the key says. Planning reads the kernel
// descriptor's [launch] section (kernel_descriptor.hpp); every kernel
// strides its grid where its descriptor caps a dimension, so caps never
// change results.
#pragma once

#include <jitwarm/jitwarm.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "expression_program.hpp"
#include "last_result_memo.hpp"

namespace jitwarm::gpu {

struct Dim3 {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
};

// What the planner needs to know about the device and the loaded function.
struct DeviceLimits {
  uint32_t multiprocessor_count = 1;
  uint32_t warp_size = 32;
  // Of the loaded function (registers may lower it below the device's).
  uint32_t max_threads_per_block = 1024;
  Dim3 max_grid{2147483647u, 65535u, 65535u};
};

struct LaunchGeometry {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_memory_bytes = 0;  // dynamic; the kernels use static only
  // Nothing to do (an empty batch): the launch is skipped.
  bool empty() const { return grid.x == 0 || grid.y == 0 || grid.z == 0; }
  std::string text() const;  // "grid (4, 1, 1) block (256, 1, 1)"
};

// A kernel argument no schema parameter carries (the descriptor's
// extra_args), as planned for one launch.
struct ExtraArgument {
  jw_int_type type = JW_INT_I64;
  int64_t value = 0;
};

// Everything a launch's arguments decide besides the parameters they are.
struct LaunchPlan {
  static constexpr std::size_t kMaxExtra = 4;
  LaunchGeometry geometry;
  std::array<ExtraArgument, kMaxExtra> extra{};
  uint32_t extra_count = 0;
};

class KeyParams;          // key_params.hpp
class LaunchProgram;      // launch_program.hpp
struct KernelDescriptor;  // kernel_descriptor.hpp
struct LaunchInputs;      // kernel_expression.hpp

// The kernel parameters of one launch, each in its own 8-byte slot (every
// parameter of the set is a pointer, a 32/64-bit integer or a float/double).
// ArgumentPacking below fills them for a launch.
class KernelArguments {
 public:
  static constexpr std::size_t kMaxParameters = 16;

  KernelArguments() = default;
  // Appends a parameter (a pointer, a 32/64-bit integer, a float/double).
  template <typename T>
  void push(T value);
  // Appends the plan's extra arguments (after the schema's).
  void append_extra(const LaunchPlan& plan);
  void set_device(int32_t device) { device_ = device; }

  // The array to pass as kernelParams; valid while this object lives (and
  // is not moved).
  void** parameters() { return pointers_.data(); }
  std::size_t count() const { return count_; }
  // The device every tensor argument lives on.
  int32_t device() const { return device_; }
  // Bytes of parameter `i` as packed (for tests).
  std::size_t size_of(std::size_t i) const { return sizes_[i]; }
  const void* slot(std::size_t i) const { return &slots_[i]; }

  KernelArguments(const KernelArguments&) = delete;
  KernelArguments& operator=(const KernelArguments&) = delete;
  KernelArguments(KernelArguments&& other) noexcept;
  KernelArguments& operator=(KernelArguments&&) = delete;

 private:
  // Out of line, so the push every launch makes stays small enough to
  // inline.
  [[noreturn, gnu::cold, gnu::noinline]] static void too_many_parameters();

  // Only the first count_ entries are written (and read): clearing all of
  // them cost a launch more than packing its arguments.
  std::array<uint64_t, kMaxParameters> slots_;
  std::array<void*, kMaxParameters> pointers_;
  std::array<std::size_t, kMaxParameters> sizes_;
  std::size_t count_ = 0;
  int32_t device_ = -1;
};

template <typename T>
inline void KernelArguments::push(T value) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  if (count_ == kMaxParameters) too_many_parameters();
  uint64_t word = 0;  // the whole slot is written, so copies read no garbage
  std::memcpy(&word, &value, sizeof(T));
  slots_[count_] = word;
  pointers_[count_] = &slots_[count_];
  sizes_[count_] = sizeof(T);
  ++count_;
}

// How a prepared launch's arguments become kernel parameters, decided once
// from its key (jw_kernel_impl.prepare), so a launch only copies values.
// pack() trusts the core's validation (docs/plugin-abi.md P12): the
// arguments match the key's kinds, dtypes, alignment, integer types and
// classes and constexprs, and every runtime tensor is on one device.
class ArgumentPacking {
 public:
  explicit ArgumentPacking(const KeyParams& key);
  KernelArguments pack(std::span<const jw_arg_value> args,
                       const LaunchPlan& plan) const;
  // The device of the launch's tensors; throws when they are host memory.
  int32_t device(std::span<const jw_arg_value> args) const;

 private:
  enum class Slot : uint8_t { skip, pointer, i32, i64, u64, f32, f64 };
  std::array<Slot, KernelArguments::kMaxParameters> slots_{};
  uint32_t count_ = 0;
  uint32_t first_tensor_ = 0;
  std::string key_text_;  // for messages
};

// Grid, block, shared memory and extra arguments for one launch of an
// instantiation (its descriptor's [launch] section). `args` are the launch
// arguments in schema order. Throws JW_ERROR_INVALID_ARGUMENT naming the
// key, the failed check (with the values it read) and the descriptor's
// file:line when the launch cannot be planned.
struct KernelInstantiation;
LaunchPlan plan_launch(const KernelInstantiation& instantiation,
                       const jw_compile_key_view& key,
                       std::span<const jw_arg_value> args,
                       const DeviceLimits& limits);
// Launch values a descriptor may define (they live on the stack).
inline constexpr std::size_t kMaxLaunchValues = 32;

// What plan_launch worked out for one prepared launch on one loaded kernel
// that is the same for every launch of it: the checks that passed, the
// launch values, block and grid dimensions, shared memory and extra
// arguments whose expressions do not vary per launch
// (KernelExpression::varies_per_launch: no shape, stride or scalar
// argument). The first launch that finds it empty fills it and later ones
// evaluate only what varies. Lock-free: one launch claims the filling, the
// others read it once it is published (release/acquire on `ready_`).
class LaunchPlanCache {
 public:
  LaunchPlanCache();  // out of line, as LaunchProgram is only declared here
  ~LaunchPlanCache();
  LaunchPlanCache(const LaunchPlanCache&) = delete;
  LaunchPlanCache& operator=(const LaunchPlanCache&) = delete;
  // Whether it is filled and later launches take the fast path (every
  // varying expression compiled into its LaunchProgram).
  bool compiled() const {
    return ready_.load(std::memory_order_acquire) && fast_;
  }

 private:
  friend LaunchPlan plan_launch(const KernelInstantiation&, const KeyParams&,
                                std::span<const jw_arg_value>,
                                const DeviceLimits&, LaunchPlanCache*);
  friend LaunchPlan plan_in_full(const KernelInstantiation&, const KeyParams&,
                                 std::span<const jw_arg_value>,
                                 const DeviceLimits&, LaunchPlanCache*);
  // Builds the fast path from the launch that filled the cache.
  void compile(const KernelDescriptor& d, const LaunchInputs& in);
  // The fast path: the cached plan, and the program for what varies. False
  // when something is out of range or a check fails: plan_launch's general
  // path, which runs each expression's own program, then says what.
  bool plan_varying(std::span<const jw_arg_value> args,
                    const DeviceLimits& limits, LaunchPlan& plan) const;
  // plan_ with the varying outputs' values (indexed like outputs_), each
  // checked as plan_launch checks it; false when one is out of range.
  bool apply(std::span<const int64_t> values, const DeviceLimits& limits,
             LaunchPlan& plan) const;

  std::atomic<bool> claimed_{false}, ready_{false};
  std::array<ExprSlot, kMaxLaunchValues> lets_{};
  // The plan of the launch that filled the cache: its block, grid, shared
  // memory and extra arguments that do not vary are every launch's.
  LaunchPlan plan_;

  // The fast path, when every varying expression compiled (fast_): the
  // program that computes the rest and where its slots go.
  bool fast_ = false;
  std::unique_ptr<LaunchProgram> program_;
  enum class Field : uint8_t { block, grid, shared_memory, extra };
  struct Output {
    Field field = Field::block;
    uint8_t index = 0;  // axis or extra argument
    uint32_t slot = 0;
  };
  static constexpr std::size_t kMaxOutputs = 3 + 3 + 1 + LaunchPlan::kMaxExtra;
  std::array<Output, kMaxOutputs> outputs_{};
  uint32_t output_count_ = 0;
  bool block_varies_ = false;

  // The last planned launch's program reads (LaunchProgram::read_inputs)
  // and plan, for the next launch that reads the same (a layer's kernel,
  // launched once per layer with one shape, runs its program once per
  // step).
  static constexpr std::size_t kMaxInputWords = 16;
  static constexpr std::size_t kPlanWords =
      (sizeof(LaunchPlan) + sizeof(uint64_t) - 1) / sizeof(uint64_t);
  bool memoized_ = false;  // program_->index_inputs() said so
  detail::LastResultMemo<kMaxInputWords + kPlanWords> last_plan_;
};

// The same with a key already checked against its schema (a prepared
// launch checks it once), and the prepared launch's cache, if any.
LaunchPlan plan_launch(const KernelInstantiation& instantiation,
                       const KeyParams& key, std::span<const jw_arg_value> args,
                       const DeviceLimits& limits,
                       LaunchPlanCache* cache = nullptr);

}  // namespace jitwarm::gpu
