// LaunchProgram: the launch-scope expressions of one prepared launch on one
// device (launch_plan.cpp's LaunchPlanCache), compiled together into one
// program of the expressions' instruction set (expression_program.hpp).
// What does not vary per launch is folded into constants, with the values
// the launch that fills the cache computed for it (each node's own code
// run alone); what varies (shapes, strides, scalar arguments and what is
// computed from them) is what a launch runs, with no recursion, allocation
// or text.
//
// A run computes exactly what the expressions would, or stops with false
// where one of them would fail (an overflow, a division by zero, a
// dimension out of range, a failed check): the caller then evaluates the
// expressions themselves, whose own programs fail there and say why. So
// this program never needs error text of its own, and the order it reads in
// does not matter.
#pragma once

#include <jitwarm/jitwarm.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "expression_program.hpp"

namespace jitwarm::gpu {

class KernelExpression;  // kernel_expression.hpp
struct LaunchInputs;     // kernel_expression.hpp

class LaunchProgram {
 public:
  // Output slots. A varying launch let read by a later expression is read
  // from its slot, so launch let i must be stored in slot i.
  static constexpr uint32_t kMaxSlots = 48;

  // Appends code that stores `e`'s value in `slot` (booleans as 0 or 1),
  // folded with `in`, the inputs of the launch that fills the cache. False
  // (appending nothing) when the code needs a deeper stack than a launch
  // keeps, or reads what a launch does not pass; the caller then keeps
  // evaluating `e` itself.
  bool store(const KernelExpression& e, const LaunchInputs& in, uint32_t slot);
  // Appends code that ends run() with false when boolean `e` is false.
  bool require(const KernelExpression& e, const LaunchInputs& in);

  // Runs the program on one launch's arguments (schema order, validated by
  // the core), writing its slots into `out`.
  bool run(std::span<const jw_arg_value> args,
           std::array<int64_t, kMaxSlots>& out) const;
  bool empty() const { return code_.empty(); }

  // What a run reads of the arguments, so that a caller may keep a run's
  // results for the next launch whose reads are the same
  // (launch_plan.hpp's LaunchPlanCache): two runs whose reads give equal
  // words compute the same slots, or both fail. index_inputs() lists the
  // reads of the finished program, each once; false when what it reads
  // depends on a value it computes (a dimension) or needs more than
  // `max_words` words.
  bool index_inputs(uint32_t max_words);
  uint32_t input_words() const { return input_words_; }
  // The reads' words for one launch's arguments (input_words() of them);
  // false when one cannot be read (the run would fail).
  bool read_inputs(std::span<const jw_arg_value> args,
                   std::span<uint64_t> words) const;

 private:
  bool append(const KernelExpression& e, const LaunchInputs& in,
              expr::Instruction last);
  std::vector<expr::Instruction> code_;
  // Of the device it is compiled for (threads_cap, block_threads,
  // lanes_for).
  int64_t warp_ = 32;
  int64_t thread_limit_ = INT64_MAX;
  struct Input {
    enum class Kind : uint8_t { scalar, shape, stride };
    Kind kind = Kind::scalar;
    uint16_t param = 0;
    int64_t dimension = 0;  // shape and stride
  };
  std::vector<Input> inputs_;
  uint32_t input_words_ = 0;  // a scalar reads two: its kind and bits
};

}  // namespace jitwarm::gpu
