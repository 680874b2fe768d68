// ArgumentSignature: the facts a compile key holds about a call's arguments
// (docs/compile-keys.md, "The rules"), computed without building a CompileKey
// and, for schemas of up to kInlineParams parameters, without allocating.
//
// It is the first half of derive_key: `specialize_arguments` validates the
// arguments against the schema and writes the signature; `key_from_signature`
// turns a signature into the CompileKey. derive_key is exactly the two in
// turn, so a signature maps to one key by construction, and the launch path
// can look up a prepared launch by signature alone (prepared_launch.hpp)
// and build the key only on a miss.
//
// Layout: two 64-bit words per schema parameter, in schema order (the
// schema fixes each parameter's kind, so the words never need a tag):
//   tensor     w0 = dtype | alignment << 8 | stride count << 16
//              w1 = stride specs, 4 bits each (int type | class << 2)
//   int        w0 = int type | class << 8
//   float      w0 = float type
//   scalar     w0 = scalar kind | int type << 8 | class << 16 | float << 24
//   constexpr  w0 = canonical scalar kind, w1 = the value's bits
// Unused words are zero, so two signatures are equal exactly when their
// words are.
#pragma once

#include <jitwarm/jitwarm.hpp>

#include <array>
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "argument_fields.hpp"  // ArgumentUse

namespace jitwarm::detail {

class ArgumentSignature {
 public:
  static constexpr uint32_t kWordsPerParam = 2;
  // Schemas with more parameters than this keep their words on the heap.
  static constexpr uint32_t kInlineParams = 32;

  ArgumentSignature() = default;
  ArgumentSignature(const ArgumentSignature&) = delete;
  ArgumentSignature& operator=(const ArgumentSignature&) = delete;

  // Sizes the signature for `num_params` parameters. The words are left
  // unset: specialize_arguments writes every one.
  void resize(uint32_t num_params);
  std::span<uint64_t> words() { return {data(), size_}; }
  std::span<const uint64_t> words() const { return {data(), size_}; }
  uint64_t* param(uint32_t index) { return data() + kWordsPerParam * index; }
  const uint64_t* param(uint32_t index) const {
    return data() + kWordsPerParam * index;
  }
  // The device index every runtime tensor of the arguments shares (-1:
  // host memory), or kNoDevice when there is none.
  static constexpr int32_t kNoDevice = INT32_MIN;
  int32_t tensor_device = kNoDevice;

  // XXH3-64 of the words, for hash tables.
  uint64_t hash() const;

 private:
  uint64_t* data() { return heap_ ? heap_.get() : inline_.data(); }
  const uint64_t* data() const { return heap_ ? heap_.get() : inline_.data(); }

  // Not value-initialized: specialize_arguments writes the words a schema
  // uses.
  std::array<uint64_t, kWordsPerParam * kInlineParams> inline_;
  std::unique_ptr<uint64_t[]> heap_;
  uint32_t size_ = 0;
};

// Validates `args` against `schema` (count, kinds, dtypes, ranks, layouts,
// null data, integer ranges, cross-parameter dtype rules) and writes their
// specialization into `out`. Missing trailing arguments with defaults take
// the default. Reads each argument only through its ArgumentFields
// (argument_fields.hpp), and `args` otherwise only for their count, so
// arguments with one ArgumentImage are judged alike. Throws
// Error(JW_ERROR_INVALID_ARGUMENT) naming the kernel and the parameter;
// builds text only then.
void specialize_arguments(const KernelSchema& schema,
                          std::span<const jw_arg_value> args, ArgumentUse use,
                          ArgumentSignature& out);

// The key of a signature made by specialize_arguments for `schema`.
CompileKey key_from_signature(const KernelSchema& schema,
                              const ArgumentSignature& signature,
                              std::string_view target,
                              std::string_view impl_name);

}  // namespace jitwarm::detail
