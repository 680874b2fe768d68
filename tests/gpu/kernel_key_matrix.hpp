// The compile keys the GPU compile tests cover, per kernel: every dtype of
// every dtype-deciding tensor with both alignments, every type and value
// class of every specialized integer, both types of every do_not_specialize
// integer and float, and the constexpr shapes that take other code paths.
// Not the cross product: each value of each dimension, with the others at a
// default (which is what exercises each branch of the instantiation).
#pragma once

#include "gpu_test_support.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace jitwarm::gpu_test {

// `kernel`: a schema name of the kernel set.
std::vector<TestKey> key_matrix(std::string_view kernel,
                                const std::string& target);

}  // namespace jitwarm::gpu_test
