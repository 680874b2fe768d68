// case_model.hpp — a kernel's arguments with their host buffers, as one
// case of them (a conformance case, the arguments `jitwarm tune` tunes
// with), independent of where it runs: host buffers with their initial
// bytes, the kernel's arguments in schema order (tensors are views of
// buffers, scalars are values), which buffers are compared after the
// launch and how, and which int64 elements must hold the address of
// another buffer (the pointer-array kernels, batch_memcpy and
// zero_kv_blocks, get their addresses only once the buffers are placed in
// the memory space they run in: case_arguments.hpp).
//
// Owns: the case data model, the builder that makes one (it checks every
// parameter of the schema is given, in order), the deterministic random
// source, and the byte encoders for each dtype. Does not own: which
// conformance cases exist (tools/conformance/cases_*.cpp), memory
// (memory_space.hpp), comparison (tools/conformance/compare.hpp).
#pragma once

#include <jitwarm/jitwarm.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace jitwarm::device_args {

// How a buffer is judged after the launch.
enum class Comparison {
  none,      // an input: never read back
  exact,     // every byte equal (integers, copies, padding)
  floating,  // dtype-aware tolerance (tools/conformance/compare.hpp)
};

// An int64 element of a buffer that must hold the address of a byte of
// another buffer, in the memory space the case runs in.
struct AddressSlot {
  int64_t element = 0;      // index into the int64 buffer
  std::size_t target = 0;   // the buffer the address points into
  int64_t byte_offset = 0;  // from that buffer's data pointer
};

struct Buffer {
  std::string name;
  // Element type: its size sets the misalignment offset and the element
  // indices in reports; it selects the float tolerance.
  jw_dtype dtype = JW_DTYPE_UINT8;
  std::vector<unsigned char> bytes;  // initial contents of the whole storage
  // Place the data pointer one element past a 16-byte boundary (every dtype
  // is at most 8 bytes wide, so that is never 16-byte aligned).
  bool misaligned = false;
  Comparison comparison = Comparison::none;
  // The storage as rows, e.g. {rows, row_stride}, to name an element as
  // [r, c] in reports; empty: a flat index.
  std::vector<int64_t> layout;
  std::vector<AddressSlot> addresses;

  std::size_t element_size() const;
  int64_t element_count() const;
};

struct TensorArg {
  std::size_t buffer = 0;
  jw_dtype dtype = JW_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; empty: compact row-major
};

using CaseArg = std::variant<std::monostate, TensorArg, jw_scalar>;

struct Case {
  std::string kernel;  // fully qualified
  std::vector<Buffer> buffers;
  std::vector<CaseArg> args;  // one per schema parameter, in schema order
};

// A small, portable, deterministic generator (splitmix64): the same seed
// gives the same cases on every machine and standard library, which the
// standard distributions do not promise.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [lo, hi] (both included).
  int64_t uniform_int(int64_t lo, int64_t hi);
  // Uniform in [lo, hi).
  double uniform_real(double lo, double hi);
  // A random permutation of [0, n).
  std::vector<int64_t> permutation(int64_t n);

 private:
  uint64_t state_;
};

// The seed of a run that names none: conformance's default --seed, and
// every `jitwarm tune` table's.
inline constexpr uint64_t kDefaultSeed = 20240607;

// The seed of one case: the run's seed mixed with the kernel and case
// names, so a case's data does not depend on which other cases run.
uint64_t case_seed(uint64_t run_seed, std::string_view kernel,
                   std::string_view case_name);

// Little-endian bytes of typed values (the host's layout is the device's).
template <typename T>
std::vector<unsigned char> to_bytes(std::span<const T> values) {
  const auto* first = reinterpret_cast<const unsigned char*>(values.data());
  return std::vector<unsigned char>(first, first + values.size_bytes());
}
template <typename T>
std::vector<unsigned char> to_bytes(const std::vector<T>& values) {
  return to_bytes(std::span<const T>(values));
}

// `count` values of a float dtype (fp32, fp16, bf16, fp64) drawn uniformly
// from [lo, hi) and rounded to the dtype. Values closer to zero than
// 2^-14 are pushed away from it, so no input is subnormal in any of the
// formats (a device that flushes subnormal inputs would otherwise differ
// for a reason that is not the kernel's).
std::vector<unsigned char> random_floats(Rng& rng, jw_dtype dtype,
                                         int64_t count, double lo, double hi);
// One float value encoded in a float dtype, appended to `out`.
void append_float(std::vector<unsigned char>& out, jw_dtype dtype,
                  double value);
// `count` valid values of any dtype: bool 0/1, integers over their whole
// range, floats finite (random_floats over [-1000, 1000)).
std::vector<unsigned char> random_values(Rng& rng, jw_dtype dtype,
                                         int64_t count);
// `count` random bytes.
std::vector<unsigned char> random_bytes(Rng& rng, int64_t count);

// Builds a Case for one schema: parameters are set by name, and finish()
// checks every parameter got a value of its kind.
class CaseBuilder {
 public:
  // `schema` must outlive the builder.
  explicit CaseBuilder(const jw_kernel_schema& schema);

  struct TensorOptions {
    std::vector<int64_t> strides;  // empty: compact
    bool misaligned = false;
    Comparison comparison = Comparison::none;
  };
  // A tensor parameter backed by a new buffer holding `bytes` (its whole
  // storage: for strided tensors, up to the last element).
  std::size_t tensor(std::string_view param, jw_dtype dtype,
                     std::vector<int64_t> shape,
                     std::vector<unsigned char> bytes, TensorOptions options);
  // A buffer no parameter names (the memory pointer arrays point into).
  std::size_t buffer(Buffer buffer);
  Buffer& buffer_at(std::size_t index) { return case_.buffers.at(index); }

  void integer(std::string_view param, int64_t value);
  void floating(std::string_view param, double value);

  // Throws std::logic_error naming the parameters without a value.
  Case finish();

 private:
  std::size_t index_of(std::string_view param) const;

  const jw_kernel_schema& schema_;
  Case case_;
};

// Elements of a tensor's storage: from the first element to one past the
// last, for a shape and (possibly empty = compact) strides.
int64_t storage_elements(std::span<const int64_t> shape,
                         std::span<const int64_t> strides);

}  // namespace jitwarm::device_args
