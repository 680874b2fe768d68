// key_matrix: the keys of kernel_key_matrix.hpp.
#include "kernel_key_matrix.hpp"

#include "kernel_set.hpp"

#include <doctest/doctest.h>

#include <utility>

namespace jitwarm::gpu_test {
namespace {

constexpr jw_dtype kEveryDtype[] = {
    JW_DTYPE_BOOL,    JW_DTYPE_INT8,    JW_DTYPE_INT16,    JW_DTYPE_INT32,
    JW_DTYPE_INT64,   JW_DTYPE_UINT8,   JW_DTYPE_UINT16,   JW_DTYPE_UINT32,
    JW_DTYPE_UINT64,  JW_DTYPE_FLOAT16, JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT32,
    JW_DTYPE_FLOAT64,
};

struct IntChoice {
  jw_int_type type;
  jw_int_class value_class;
};
// Every type and class a non-dns integer can have (the class "one" only
// exists for i32; docs/compile-keys.md).
constexpr IntChoice kSpecializedInts[] = {
    {JW_INT_I32, JW_INT_CLASS_NONE},  {JW_INT_I32, JW_INT_CLASS_ONE},
    {JW_INT_I32, JW_INT_CLASS_DIV16}, {JW_INT_I64, JW_INT_CLASS_NONE},
    {JW_INT_I64, JW_INT_CLASS_DIV16}, {JW_INT_U64, JW_INT_CLASS_NONE},
    {JW_INT_U64, JW_INT_CLASS_DIV16},
};

std::vector<jw_dtype> dtypes_of(const jw_param_desc& desc) {
  std::vector<jw_dtype> dtypes;
  for (jw_dtype d : kEveryDtype) {
    if (desc.allowed_dtypes == 0 || (desc.allowed_dtypes & JW_DTYPE_BIT(d))) {
      dtypes.push_back(d);
    }
  }
  return dtypes;
}

// Sets every specialized integer of `key` to (i32, divisible by 16), so that
// an aligned key reaches the vectorized code.
void all_ints_div16(TestKey& key) {
  for (uint32_t i = 0; i < key.size(); ++i) {
    const jw_param_desc& desc = key.descs()[i];
    if (desc.kind == JW_PARAM_INT &&
        (desc.flags & JW_PARAM_DO_NOT_SPECIALIZE) == 0) {
      key.integer(desc.name, JW_INT_I32, JW_INT_CLASS_DIV16);
    }
  }
}

// Constexpr values that change code paths (tile shapes that cannot be
// vectors, block sizes at the limits, context parallelism).
std::vector<std::vector<std::pair<const char*, int64_t>>> constexpr_variants(
    std::string_view kernel) {
  namespace ks = jitwarm::kernel_set;
  if (kernel == ks::kComputeSlotMapping) {
    return {{{"blocks_per_kv_block", 2}},
            {{"cp_world_size", 2}, {"cp_rank", 1}},
            {{"cp_world_size", 4}, {"cp_rank", 3}, {"cp_interleave", 16}}};
  }
  if (kernel == ks::kExpand) {
    return {{{"MAX_NUM_TOKENS", 1}}, {{"MAX_NUM_TOKENS", 1024}}};
  }
  if (kernel == ks::kBatchMemcpy) {
    return {
        {{"BLOCK_SIZE", 32}}, {{"BLOCK_SIZE", 1024}}, {{"BLOCK_SIZE", 100}}};
  }
  if (kernel == ks::kScatterStates) {
    return {{{"ROW_SIZE", 3}},
            {{"ROW_SIZE", 0}},
            {{"ROW_SIZE", 4096}, {"BLOCK_SIZE", 2048}}};
  }
  if (kernel == ks::kPackSeq || kernel == ks::kUnpackSeq) {
    return {{{"BLOCK_T", 1}, {"BLOCK_D", 3}},
            {{"BLOCK_T", 32}, {"BLOCK_D", 256}}};
  }
  return {};
}

// The keys of one kernel: the cross product is never needed, every value of
// every dimension is, each against a default of the others.
}  // namespace

std::vector<TestKey> key_matrix(std::string_view name,
                                const std::string& target) {
  std::vector<TestKey> keys;
  keys.emplace_back(name, target);
  const TestKey base(name, target);
  for (uint32_t i = 0; i < base.size(); ++i) {
    const jw_param_desc& desc = base.descs()[i];
    switch (desc.kind) {
      case JW_PARAM_TENSOR: {
        // Dtype roots only (tensors tied by same_dtype_as follow them).
        if (desc.same_dtype_as != nullptr) break;
        for (jw_dtype dtype : dtypes_of(desc)) {
          for (bool aligned : {true, false}) {
            for (bool div16 : {true, false}) {
              TestKey key(name, target);
              key.dtype(desc.name, dtype).all_aligned(aligned);
              if (div16) all_ints_div16(key);
              keys.push_back(key);
            }
          }
        }
        break;
      }
      case JW_PARAM_INT:
        if ((desc.flags & JW_PARAM_DO_NOT_SPECIALIZE) != 0) {
          for (jw_int_type type : {JW_INT_I64, JW_INT_U64}) {
            TestKey key(name, target);
            key.integer(desc.name, type);
            keys.push_back(key);
          }
        } else {
          for (const IntChoice& choice : kSpecializedInts) {
            TestKey key(name, target);
            all_ints_div16(key);
            key.integer(desc.name, choice.type, choice.value_class);
            keys.push_back(key);
          }
        }
        break;
      case JW_PARAM_FLOAT: {
        TestKey key(name, target);
        key.floating(desc.name, JW_FLOAT_F64);
        keys.push_back(key);
        break;
      }
      case JW_PARAM_SCALAR: {
        // A scalar of an integer x takes every integer type; of a float x,
        // both float types.
        const jw_param_desc* tied = nullptr;
        for (uint32_t j = 0; j < base.size(); ++j) {
          if (desc.same_dtype_as != nullptr &&
              std::string_view(base.descs()[j].name) == desc.same_dtype_as) {
            tied = &base.descs()[j];
          }
        }
        REQUIRE(tied != nullptr);
        for (jw_dtype x : dtypes_of(*tied)) {
          if (x == JW_DTYPE_FLOAT32) {
            TestKey key(name, target);
            key.dtype(tied->name, x).floating(desc.name, JW_FLOAT_F64);
            keys.push_back(key);
          } else {
            for (jw_int_type type : {JW_INT_I32, JW_INT_I64, JW_INT_U64}) {
              TestKey key(name, target);
              key.dtype(tied->name, x).integer(desc.name, type);
              keys.push_back(key);
            }
          }
        }
        break;
      }
      case JW_PARAM_CONSTEXPR: break;
    }
  }
  for (const auto& variant : constexpr_variants(name)) {
    for (bool aligned : {true, false}) {
      TestKey key(name, target);
      key.all_aligned(aligned);
      all_ints_div16(key);
      for (const auto& [param, value] : variant) key.constant(param, value);
      keys.push_back(key);
    }
  }
  return keys;
}

}  // namespace jitwarm::gpu_test
