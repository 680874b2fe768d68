// The CUDA plugin on a real GPU, through the core (Runtime, both bundled
// plugins loaded): each kernel runs on inputs that reach its branches
// (empty and padded requests, both alignments, every integer class,
// overlapping copies, 1/2/4-byte elements) and must match the CPU reference
// on the same inputs: exactly, or within fp32 rel 1e-5 / one ulp of
// fp16/bf16. Then bandwidth of the memory-bound kernels against a
// device-to-device copy of the same bytes. Exits 77 (skipped) without a
// CUDA device, so it can sit in CI machines of every kind.
#define DOCTEST_CONFIG_IMPLEMENT
#include <jitwarm/jitwarm.hpp>
#include <jitwarm/plugin/float16.hpp>

#include "allocation_counter.hpp"
#include "expand_device_args.hpp"
#include "kernel_set.hpp"

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ks = jitwarm::kernel_set;
namespace num = jitwarm::numeric;

namespace {

jitwarm::Runtime* g_runtime = nullptr;

std::size_t dtype_bytes(jw_dtype d) {
  return jitwarm::dtype_size(d);
}

// Deterministic inputs.
struct Random {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }
};

// Storage of one tensor on the host; `misalign` bytes past a 64-byte
// boundary on both platforms.
struct Buffer {
  std::string param;  // the argument it is passed as; empty: a pool
  jw_dtype dtype = JW_DTYPE_UINT8;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // empty: compact
  std::vector<unsigned char> bytes;
  std::size_t misalign = 0;
  bool compare = false;
  // An int64 tensor of addresses: offsets into buffer `pool`.
  int pool = -1;
  std::vector<int64_t> offsets;
};

class Case {
 public:
  Case(std::string_view kernel, std::string label)
      : kernel_(kernel), label_(std::move(label)) {
    const jw_kernel_schema* schema = ks::find_schema(kernel);
    REQUIRE(schema != nullptr);
    schema_ = schema;
    args_.resize(schema->num_params);
    arg_buffer_.assign(schema->num_params, -1);
  }

  // A tensor from raw element values (converted to `dtype`): compact, or
  // with `strides`, in which case `values` fill the whole storage.
  Case& tensor(const std::string& param, jw_dtype dtype,
               std::vector<int64_t> shape, const std::vector<double>& values,
               bool compare = false, std::size_t misalign = 0,
               std::vector<int64_t> strides = {}) {
    Buffer b;
    b.param = param;
    b.dtype = dtype;
    b.shape = std::move(shape);
    b.strides = std::move(strides);
    b.misalign = misalign;
    b.compare = compare;
    int64_t count = 1;
    for (int64_t d : b.shape) count *= d;
    if (!b.strides.empty()) count = static_cast<int64_t>(values.size());
    REQUIRE(static_cast<int64_t>(values.size()) == count);
    b.bytes.resize(static_cast<std::size_t>(count) * dtype_bytes(dtype));
    for (int64_t i = 0; i < count; ++i) store(b, i, values[i]);
    return add(std::move(b));
  }
  // A byte pool that address tensors point into; compared after the run.
  int pool(std::size_t size, Random& random) {
    Buffer b;
    b.bytes.resize(size);
    for (auto& byte : b.bytes) byte = static_cast<unsigned char>(random.next());
    b.compare = true;
    b.shape = {static_cast<int64_t>(size)};
    buffers_.push_back(std::move(b));
    return static_cast<int>(buffers_.size() - 1);
  }
  Case& addresses(const std::string& param, int pool,
                  std::vector<int64_t> offsets) {
    Buffer b;
    b.param = param;
    b.dtype = JW_DTYPE_INT64;
    b.shape = {static_cast<int64_t>(offsets.size())};
    b.pool = pool;
    b.offsets = std::move(offsets);
    b.bytes.resize(b.offsets.size() * 8);
    return add(std::move(b));
  }
  Case& integer(const std::string& param, int64_t value) {
    args_[index(param)] = jitwarm::arg_int(value);
    return *this;
  }
  Case& floating(const std::string& param, double value) {
    args_[index(param)] = jitwarm::arg_float(value);
    return *this;
  }

  void run();

 private:
  static void store(Buffer& b, int64_t i, double v) {
    unsigned char* p = b.bytes.data() + i * dtype_bytes(b.dtype);
    switch (b.dtype) {
      case JW_DTYPE_FLOAT32: {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case JW_DTYPE_FLOAT16: {
        const uint16_t h = num::float16_bits_from_double(v);
        std::memcpy(p, &h, 2);
        break;
      }
      case JW_DTYPE_BFLOAT16: {
        const uint16_t h = num::bfloat16_bits_from_double(v);
        std::memcpy(p, &h, 2);
        break;
      }
      default: {
        const int64_t n = static_cast<int64_t>(v);
        std::memcpy(p, &n, dtype_bytes(b.dtype));  // little-endian
      }
    }
  }
  Case& add(Buffer b) {
    const uint32_t i = index(b.param);
    buffers_.push_back(std::move(b));
    arg_buffer_[i] = static_cast<int>(buffers_.size() - 1);
    return *this;
  }
  uint32_t index(const std::string& param) const {
    for (uint32_t i = 0; i < schema_->num_params; ++i) {
      if (param == schema_->params[i].name) return i;
    }
    FAIL("no parameter " << param);
    return 0;
  }
  void compare(const Buffer& expected, const std::vector<unsigned char>& got);

  std::string kernel_;
  std::string label_;
  const jw_kernel_schema* schema_ = nullptr;
  std::vector<Buffer> buffers_;
  std::vector<jw_arg_value> args_;
  std::vector<int> arg_buffer_;
};

// Storage of every buffer of a case on one platform.
struct Placement {
  std::vector<unsigned char*> base;  // what was allocated
  std::vector<unsigned char*> data;  // base + 64-byte rounding + misalign
  std::vector<jw_tensor> tensors;
};

const jw_platform_desc& cuda() {
  return g_runtime->platform("cuda");
}

void check(jw_status status, const char* what) {
  REQUIRE_MESSAGE(status == JW_OK, what << ": " << jw_last_error());
}

std::vector<unsigned char> to_host(const unsigned char* device, std::size_t n) {
  std::vector<unsigned char> out(n);
  if (n == 0) return out;
  const jw_platform_desc& p = cuda();
  check(p.copy(p.user_data, 0, out.data(), device, n, JW_COPY_DEVICE_TO_HOST,
               nullptr),
        "copy to host");
  check(p.synchronize(p.user_data, 0, nullptr), "synchronize");
  return out;
}

void Case::run() {
  CAPTURE(kernel_);
  CAPTURE(label_);
  // Both platforms get the same initial bytes (addresses filled per
  // platform), the CPU reference runs on host copies, the GPU on device
  // copies.
  std::vector<std::vector<unsigned char>> host_storage(buffers_.size());
  Placement host, device;
  const jw_platform_desc& p = cuda();
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const std::size_t size = buffers_[i].bytes.size() + 128;
    host_storage[i].resize(size);
    unsigned char* h = host_storage[i].data();
    const auto aligned = [&](unsigned char* base) {
      const uintptr_t a =
          (reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t{63};
      return reinterpret_cast<unsigned char*>(a) + buffers_[i].misalign;
    };
    host.base.push_back(h);
    host.data.push_back(aligned(h));
    void* d = nullptr;
    check(p.allocate(p.user_data, 0, size, &d), "allocate");
    device.base.push_back(static_cast<unsigned char*>(d));
    device.data.push_back(aligned(static_cast<unsigned char*>(d)));
  }
  for (Placement* where : {&host, &device}) {
    const bool on_device = where == &device;
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      Buffer& b = buffers_[i];
      std::vector<unsigned char> bytes = b.bytes;
      if (b.pool >= 0) {
        for (std::size_t k = 0; k < b.offsets.size(); ++k) {
          const int64_t address = static_cast<int64_t>(
              reinterpret_cast<uintptr_t>(where->data[b.pool]) + b.offsets[k]);
          std::memcpy(bytes.data() + 8 * k, &address, 8);
        }
      }
      if (on_device) {
        if (!bytes.empty()) {
          check(p.copy(p.user_data, 0, device.data[i], bytes.data(),
                       bytes.size(), JW_COPY_HOST_TO_DEVICE, nullptr),
                "copy to device");
        }
      } else if (!bytes.empty()) {
        std::memcpy(host.data[i], bytes.data(), bytes.size());
      }
      const jw_dtype dtype = b.param.empty() ? JW_DTYPE_UINT8 : b.dtype;
      where->tensors.push_back(
          b.strides.empty()
              ? jitwarm::make_tensor(where->data[i], dtype, b.shape,
                                     on_device ? 0 : -1)
              : jitwarm::make_tensor(where->data[i], dtype, b.shape, b.strides,
                                     on_device ? 0 : -1));
    }
  }
  check(p.synchronize(p.user_data, 0, nullptr), "synchronize");

  auto args_on = [&](Placement& where) {
    std::vector<jw_arg_value> args = args_;
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (arg_buffer_[i] >= 0)
        args[i] = jitwarm::arg(where.tensors[arg_buffer_[i]]);
    }
    // Constexprs left out take their schema default or a typical value.
    for (uint32_t i = 0; i < schema_->num_params; ++i) {
      if (args[i].struct_size == 0) {
        FAIL("argument " << schema_->params[i].name << " is not set");
      }
    }
    return args;
  };
  const jitwarm::KernelHandle kernel = g_runtime->kernel(kernel_);
  const std::vector<jw_arg_value> cpu_args = args_on(host);
  kernel.launch(cpu_args, {"cpu", 0, nullptr});
  const std::vector<jw_arg_value> gpu_args = args_on(device);
  INFO("key: " << kernel.key_for(gpu_args, {"cuda", 0, nullptr}).text());
  kernel.launch(gpu_args, {"cuda", 0, nullptr});
  check(p.synchronize(p.user_data, 0, nullptr), "synchronize after launch");

  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    if (!buffers_[i].compare) continue;
    Buffer expected = buffers_[i];
    expected.bytes.assign(host.data[i], host.data[i] + expected.bytes.size());
    compare(expected, to_host(device.data[i], expected.bytes.size()));
  }
  for (unsigned char* d : device.base) {
    check(p.free_memory(p.user_data, 0, d), "free");
  }
}

void Case::compare(const Buffer& expected,
                   const std::vector<unsigned char>& got) {
  CAPTURE(expected.param);
  const std::size_t element =
      expected.param.empty() ? 1 : dtype_bytes(expected.dtype);
  std::size_t mismatches = 0;
  for (std::size_t at = 0; at < got.size(); at += element) {
    const unsigned char* e = expected.bytes.data() + at;
    const unsigned char* g = got.data() + at;
    bool ok = std::memcmp(e, g, element) == 0;
    if (!ok && !expected.param.empty()) {
      if (expected.dtype == JW_DTYPE_FLOAT32) {
        float a, b;
        std::memcpy(&a, e, 4);
        std::memcpy(&b, g, 4);
        ok = std::fabs(a - b) <= 1e-5 * std::fabs(a) + 1e-6;
      } else if (expected.dtype == JW_DTYPE_FLOAT16 ||
                 expected.dtype == JW_DTYPE_BFLOAT16) {
        uint16_t a, b;
        std::memcpy(&a, e, 2);
        std::memcpy(&b, g, 2);
        ok = (expected.dtype == JW_DTYPE_FLOAT16
                  ? num::ulp_distance_float16(a, b)
                  : num::ulp_distance_bfloat16(a, b)) <= 1;
      }
    }
    if (!ok && ++mismatches <= 5) {
      std::string e_hex, g_hex;
      char buf[4];
      for (std::size_t k = 0; k < element; ++k) {
        std::snprintf(buf, sizeof(buf), "%02x", e[element - 1 - k]);
        e_hex += buf;
        std::snprintf(buf, sizeof(buf), "%02x", g[element - 1 - k]);
        g_hex += buf;
      }
      MESSAGE("element " << at / element << ": expected 0x" << e_hex
                         << ", got 0x" << g_hex);
    }
  }
  CHECK_MESSAGE(mismatches == 0, mismatches << " mismatching elements");
}

std::vector<double> random_values(Random& r, std::size_t n, double lo,
                                  double hi) {
  std::vector<double> v(n);
  for (double& x : v) x = r.uniform(lo, hi);
  return v;
}

}  // namespace

TEST_CASE("compute_slot_mapping matches the reference") {
  Random r;
  for (int64_t block_size : {16, 1, 5}) {
    for (int64_t world : {1, 2}) {
      Case c(ks::kComputeSlotMapping, "block_size " +
                                          std::to_string(block_size) +
                                          " world " + std::to_string(world));
      const int64_t rows = 4, stride = 32, max_tokens = 3000;
      const std::vector<double> qsl{0, 5, 5, 37, 2037};
      std::vector<double> positions(2037);
      // Positions whose block column stays inside the table's row.
      for (double& p : positions) {
        p = static_cast<double>(r.next() % ((stride - 1) * block_size * world));
      }
      c.tensor("query_start_loc", JW_DTYPE_INT32, {5}, qsl)
          .tensor("positions", JW_DTYPE_INT64, {2037}, positions)
          .tensor("block_table", JW_DTYPE_INT32, {rows, stride},
                  random_values(r, rows * stride, 0, 1000))
          .integer("block_table_stride", stride)
          .tensor("slot_mapping", JW_DTYPE_INT64, {max_tokens},
                  std::vector<double>(max_tokens, 12345), true)
          .integer("num_reqs", 4)
          .integer("max_num_tokens", max_tokens)
          .integer("block_size", block_size)
          .integer("blocks_per_kv_block", 1)
          .integer("cp_world_size", world)
          .integer("cp_rank", world - 1)
          .integer("cp_interleave", world == 1 ? 1 : 4);
      c.run();
    }
  }
}

TEST_CASE("expand matches the reference") {
  for (jw_dtype dtype : {JW_DTYPE_INT32, JW_DTYPE_INT64, JW_DTYPE_FLOAT32}) {
    Case c(ks::kExpand, "dtype " + std::to_string(dtype));
    c.tensor("output", dtype, {12}, std::vector<double>(12, -7), true)
        .tensor("x", dtype, {4}, {5, 9, 5, 7})
        .tensor("cu_num_tokens", JW_DTYPE_INT32, {4}, {2, 5, 6, 10});
    if (dtype == JW_DTYPE_FLOAT32) {
      c.floating("replace_from", 5).floating("replace_to", 0.5);
    } else {
      c.integer("replace_from", 5).integer("replace_to", 0);
    }
    c.integer("MAX_NUM_TOKENS", 4);
    c.run();
  }
}

TEST_CASE("batch_memcpy matches the reference, overlapping pairs included") {
  Random r;
  for (int64_t threads : {256, 1024, 100}) {
    Case c(ks::kBatchMemcpy, "BLOCK_SIZE " + std::to_string(threads));
    const int pool = c.pool(4 << 20, r);
    // (src offset, dst offset, size): aligned, tiny, unaligned with the
    // same and with different alignment, overlapping both ways, empty, big.
    const std::vector<std::array<int64_t, 3>> copies{
        {0, 1 << 20, 4096},
        {5000, 6000, 1},
        {8003, 9003, 1000},
        {10003, 12005, 7777},
        {20000, 20005, 3000},
        {30000, 29993, 3000},
        {40000, 40160, 50000},
        {100000, 100000 + 4, 65536 + 3},
        {200000, 300000, 0},
        {1 << 21, (1 << 21) + (600 << 10) + 16, 600 << 10},
        {400001, 400000 + 333, 12345},
        {500000, 600001, 5000},
        {700004, 800008, 9000}};
    std::vector<int64_t> src, dst;
    std::vector<double> sizes;
    for (const auto& [s, d, n] : copies) {
      src.push_back(s);
      dst.push_back(d);
      sizes.push_back(static_cast<double>(n));
    }
    c.addresses("src_ptrs", pool, src)
        .addresses("dst_ptrs", pool, dst)
        .tensor("sizes", JW_DTYPE_INT64, {static_cast<int64_t>(copies.size())},
                sizes)
        .integer("num_copies", static_cast<int64_t>(copies.size()))
        .integer("BLOCK_SIZE", threads);
    c.run();
  }
}

TEST_CASE(
    "batch_memcpy matches the reference when batches mix small, large and "
    "overlapping copies") {
  Random r;
  // Small disjoint copies go to a warp, the rest to the whole block: mix
  // them in every batch, sizes around the 16 KiB line included.
  const int64_t count = 257;
  std::vector<int64_t> src, dst;
  std::vector<double> sizes;
  int64_t cursor = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t size = (i * 131) % 16400;
    if (i % 5 == 2) size = 16384 + (i % 3) - 1 + (i % 10 == 2 ? 20000 : 0);
    const bool overlapping = i % 9 == 4;
    const int64_t s = cursor + i % 16;
    const int64_t d = overlapping ? s + (i % 2 == 0 ? 1 : -1) * (1 + i % 40)
                                  : s + size + 1 + i % 13;
    src.push_back(s);
    dst.push_back(std::max<int64_t>(d, 0));
    sizes.push_back(static_cast<double>(size));
    cursor = std::max(s, d) + size + 64;
  }
  for (int64_t threads : {1024, 160, 8}) {
    Case c(ks::kBatchMemcpy, "mixed, BLOCK_SIZE " + std::to_string(threads));
    const int pool = c.pool(static_cast<std::size_t>(cursor + 64), r);
    c.addresses("src_ptrs", pool, src)
        .addresses("dst_ptrs", pool, dst)
        .tensor("sizes", JW_DTYPE_INT64, {count}, sizes)
        .integer("num_copies", count)
        .integer("BLOCK_SIZE", threads);
    c.run();
  }
}

TEST_CASE("zero_kv_blocks matches the reference") {
  Random r;
  for (int64_t blocks : {3, 1, 16}) {
    Case c(ks::kZeroKvBlocks, "n_blocks " + std::to_string(blocks));
    const int pool = c.pool(1 << 20, r);
    std::vector<double> ids;
    for (int64_t b = 0; b < blocks; ++b)
      ids.push_back(static_cast<double>((b * 7) % 40));
    c.tensor("block_ids", JW_DTYPE_INT32, {blocks}, ids)
        .addresses("seg_addrs", pool, {0, 300003})
        .tensor("seg_block_stride", JW_DTYPE_INT64, {2}, {4096, 1000})
        .tensor("seg_block_bytes", JW_DTYPE_INT64, {2}, {4096, 777})
        .integer("n_blocks", blocks)
        .integer("n_segments", 2);
    c.run();
  }
}

TEST_CASE("scatter_states matches the reference") {
  Random r;
  struct Shape {
    jw_dtype dtype;
    int64_t row;
    jw_dtype index;
  };
  for (const Shape& s : {Shape{JW_DTYPE_FLOAT32, 100, JW_DTYPE_INT64},
                         Shape{JW_DTYPE_BFLOAT16, 128, JW_DTYPE_INT32},
                         Shape{JW_DTYPE_INT8, 3, JW_DTYPE_INT32},
                         Shape{JW_DTYPE_FLOAT64, 4096, JW_DTYPE_INT64}}) {
    Case c(ks::kScatterStates, "dtype " + std::to_string(s.dtype) + " row " +
                                   std::to_string(s.row));
    const int64_t rows = 40, sources = 6;
    const bool small = s.dtype == JW_DTYPE_INT8;
    c.tensor("state", s.dtype, {rows, s.row},
             random_values(r, rows * s.row, small ? -100 : -1, small ? 100 : 1),
             true)
        .integer("state_stride", s.row)
        .tensor("src", s.dtype, {sources, s.row},
                random_values(r, sources * s.row, small ? -100 : -1,
                              small ? 100 : 1))
        .tensor("indices", s.index, {sources}, {3, -1, 10, 39, 0, -5})
        .integer("num_rows", sources)
        .integer("ROW_SIZE", s.row)
        .integer("BLOCK_SIZE", 512);
    c.run();
  }
}

TEST_CASE("pack_seq and unpack_seq match the reference") {
  Random r;
  struct Shape {
    jw_dtype dtype;
    int64_t d;
    int64_t block_d;
  };
  for (const Shape& s :
       {Shape{JW_DTYPE_FLOAT32, 64, 32}, Shape{JW_DTYPE_BFLOAT16, 70, 64},
        Shape{JW_DTYPE_UINT8, 16, 16}, Shape{JW_DTYPE_FLOAT16, 200, 3}}) {
    const std::vector<double> lengths{3, 0, 7, 10};
    const int64_t n = 20, l_max = 11, batch = 4;
    const bool bytes = s.dtype == JW_DTYPE_UINT8;
    {
      Case c(ks::kPackSeq, "pack dtype " + std::to_string(s.dtype));
      c.tensor("x", s.dtype, {n, s.d},
               random_values(r, n * s.d, 0, bytes ? 255 : 1))
          .tensor("lengths", JW_DTYPE_INT32, {batch}, lengths)
          .tensor("out", s.dtype, {batch, l_max, s.d},
                  std::vector<double>(batch * l_max * s.d, 9), true)
          .integer("N", n)
          .integer("D", s.d)
          .integer("L_max", l_max)
          .floating("pad_value", bytes ? 7 : -1.5)
          .integer("BLOCK_T", 4)
          .integer("BLOCK_D", s.block_d);
      c.run();
    }
    {
      Case c(ks::kUnpackSeq, "unpack dtype " + std::to_string(s.dtype));
      c.tensor("packed", s.dtype, {batch, l_max, s.d},
               random_values(r, batch * l_max * s.d, 0, bytes ? 255 : 1))
          .tensor("lengths", JW_DTYPE_INT32, {batch}, lengths)
          .tensor("out", s.dtype, {n, s.d}, std::vector<double>(n * s.d, 9),
                  true)
          .integer("N", n)
          .integer("D", s.d)
          .integer("L_max", l_max)
          .integer("BLOCK_T", 4)
          .integer("BLOCK_D", s.block_d);
      c.run();
    }
  }
}

TEST_CASE("prepare_pos_seq_lens matches the reference") {
  Case c(ks::kPreparePosSeqLens, "three requests, five slots");
  c.tensor("idx_mapping", JW_DTYPE_INT32, {3}, {2, 0, 1})
      .tensor("query_start_loc", JW_DTYPE_INT32, {4}, {0, 4, 4, 900})
      .tensor("num_computed_tokens", JW_DTYPE_INT32, {3}, {10, 20, 30})
      .tensor("seq_lens", JW_DTYPE_INT32, {6}, std::vector<double>(6, -3), true)
      .tensor("positions", JW_DTYPE_INT64, {1000},
              std::vector<double>(1000, -3), true)
      .integer("num_reqs", 3)
      .integer("seq_lens_len", 5);
  c.run();
}

TEST_CASE("rms_norm matches the reference") {
  Random r;
  struct Shape {
    jw_dtype dtype;
    int64_t rows, hidden, stride;
    std::size_t misalign;
  };
  // Each shape a different compile key (classes, alignment, dtype), so
  // every one compiles and launches its own binary.
  for (const Shape& s : {Shape{JW_DTYPE_FLOAT32, 5, 1000, 1000, 0},
                         Shape{JW_DTYPE_BFLOAT16, 7, 4096, 4096, 0},
                         Shape{JW_DTYPE_FLOAT16, 3, 33, 40, 0},
                         Shape{JW_DTYPE_FLOAT32, 4, 8192, 8192, 4},
                         Shape{JW_DTYPE_BFLOAT16, 9, 1, 16, 0},
                         Shape{JW_DTYPE_FLOAT16, 6, 2048, 2048, 2},
                         Shape{JW_DTYPE_BFLOAT16, 3, 16392, 16392, 0},
                         Shape{JW_DTYPE_FLOAT32, 2, 65536, 65536, 0}}) {
    Case c(ks::kRmsNorm, "dtype " + std::to_string(s.dtype) + " H " +
                             std::to_string(s.hidden));
    c.tensor("out", s.dtype, {s.rows, s.hidden},
             std::vector<double>(s.rows * s.hidden, 0), true)
        .tensor("x", s.dtype, {s.rows, s.hidden},
                random_values(r, s.rows * s.stride, -2, 2), false, s.misalign,
                {s.stride, 1})
        .tensor("weight", s.dtype, {s.hidden},
                random_values(r, s.hidden, 0.5, 1.5))
        .floating("eps", 1e-6)
        .integer("T", s.rows)
        .integer("H", s.hidden)
        .integer("x_stride", s.stride);
    c.run();
  }
}

TEST_CASE("silu_and_mul matches the reference") {
  Random r;
  struct Shape {
    jw_dtype dtype;
    int64_t rows, hidden;
  };
  for (const Shape& s :
       {Shape{JW_DTYPE_FLOAT32, 5, 100}, Shape{JW_DTYPE_BFLOAT16, 9, 4096},
        Shape{JW_DTYPE_FLOAT16, 3, 7}, Shape{JW_DTYPE_FLOAT32, 2, 11008}}) {
    Case c(ks::kSiluAndMul, "dtype " + std::to_string(s.dtype) + " H " +
                                std::to_string(s.hidden));
    c.tensor("out", s.dtype, {s.rows, s.hidden},
             std::vector<double>(s.rows * s.hidden, 0), true)
        .tensor("x", s.dtype, {s.rows, 2 * s.hidden},
                random_values(r, s.rows * 2 * s.hidden, -8, 8))
        .integer("T", s.rows)
        .integer("H", s.hidden);
    c.run();
  }
}

TEST_CASE("a cached key launched again gets a valid key view") {
  // The second launch of a key finds its artifact in the cache; the key view
  // handed to the plugin must still name the kernel and its parameters.
  // (A key no other case uses: bf16 with H of no class.)
  Random r;
  for (int round = 0; round < 2; ++round) {
    Case c(ks::kSiluAndMul, "round " + std::to_string(round));
    c.tensor("out", JW_DTYPE_BFLOAT16, {4, 24}, std::vector<double>(96, 0),
             true)
        .tensor("x", JW_DTYPE_BFLOAT16, {4, 48}, random_values(r, 192, -4, 4))
        .integer("T", 4)
        .integer("H", 24);
    c.run();
  }
}

// The few driver entry points the next test calls itself, declared here
// (this test has no CUDA headers; the symbols are the versioned ABI names).
namespace driver {
using Result = int;
using Context = struct Opaque*;
using Stream = struct Opaque*;
using DevicePointer = unsigned long long;

struct Api {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  template <typename Fn>
  Fn get(const char* name) const {
    void* symbol = library != nullptr ? dlsym(library, name) : nullptr;
    REQUIRE_MESSAGE(symbol != nullptr, "libcuda.so.1 lacks " << name);
    return reinterpret_cast<Fn>(symbol);
  }
  Result (*ctx_create)(Context*, unsigned,
                       int) = get<decltype(ctx_create)>("cuCtxCreate_v2");
  Result (*ctx_destroy)(Context) =
      get<decltype(ctx_destroy)>("cuCtxDestroy_v2");
  Result (*stream_create)(Stream*, unsigned) =
      get<decltype(stream_create)>("cuStreamCreate");
  Result (*stream_destroy)(Stream) =
      get<decltype(stream_destroy)>("cuStreamDestroy_v2");
  Result (*stream_synchronize)(Stream) =
      get<decltype(stream_synchronize)>("cuStreamSynchronize");
  Result (*mem_alloc)(DevicePointer*,
                      std::size_t) = get<decltype(mem_alloc)>("cuMemAlloc_v2");
  Result (*mem_free)(DevicePointer) = get<decltype(mem_free)>("cuMemFree_v2");
  Result (*copy_to_device)(DevicePointer, const void*, std::size_t) =
      get<decltype(copy_to_device)>("cuMemcpyHtoD_v2");
  Result (*copy_to_host)(void*, DevicePointer, std::size_t) =
      get<decltype(copy_to_host)>("cuMemcpyDtoH_v2");
  Result (*primary_ctx_retain)(Context*, int) =
      get<decltype(primary_ctx_retain)>("cuDevicePrimaryCtxRetain");
  Result (*primary_ctx_release)(int) =
      get<decltype(primary_ctx_release)>("cuDevicePrimaryCtxRelease_v2");
  Result (*ctx_set_current)(Context) =
      get<decltype(ctx_set_current)>("cuCtxSetCurrent");
  // Stream capture (CUDA graphs), as torch.cuda.graph uses it.
  using Graph = struct Opaque*;
  using GraphExec = struct Opaque*;
  static constexpr int kCaptureModeGlobal = 0;  // CU_STREAM_CAPTURE_MODE_GLOBAL
  Result (*begin_capture)(Stream, int) =
      get<decltype(begin_capture)>("cuStreamBeginCapture_v2");
  Result (*end_capture)(Stream, Graph*) =
      get<decltype(end_capture)>("cuStreamEndCapture");
  Result (*graph_instantiate)(GraphExec*, Graph, unsigned long long) =
      get<decltype(graph_instantiate)>("cuGraphInstantiateWithFlags");
  Result (*graph_launch)(GraphExec,
                         Stream) = get<decltype(graph_launch)>("cuGraphLaunch");
  Result (*graph_exec_destroy)(GraphExec) =
      get<decltype(graph_exec_destroy)>("cuGraphExecDestroy");
  Result (*graph_destroy)(Graph) =
      get<decltype(graph_destroy)>("cuGraphDestroy");
};

// expand of three requests on device memory of the current context:
// x = [5, 9, 5], cu = [2, 5, 6], 5 replaced by 0 (the example of
// docs/kernels.md, 2. expand).
struct ExpandOnDevice {
  explicit ExpandOnDevice(const Api& driver_api) : api(driver_api) {
    REQUIRE(api.mem_alloc(&output, 24) == 0);
    REQUIRE(api.mem_alloc(&x, 12) == 0);
    REQUIRE(api.mem_alloc(&cu, 12) == 0);
    set_x({5, 9, 5});
    const std::vector<int32_t> cu_host{2, 5, 6};
    REQUIRE(api.copy_to_device(cu, cu_host.data(), 12) == 0);
    clear_output();
  }
  ~ExpandOnDevice() {
    for (DevicePointer p : {output, x, cu}) CHECK(api.mem_free(p) == 0);
  }
  ExpandOnDevice(const ExpandOnDevice&) = delete;
  ExpandOnDevice& operator=(const ExpandOnDevice&) = delete;

  void set_x(const std::vector<int32_t>& values) {
    REQUIRE(api.copy_to_device(x, values.data(), 12) == 0);
  }
  void clear_output() {
    const std::vector<int32_t> minus_seven(6, -7);
    REQUIRE(api.copy_to_device(output, minus_seven.data(), 24) == 0);
  }
  std::vector<int32_t> read_output() const {
    std::vector<int32_t> host(6, 0);
    REQUIRE(api.copy_to_host(host.data(), output, 24) == 0);
    return host;
  }
  void launch(void* stream) const {
    const jitwarm::gpu_test::ExpandDeviceArgs call(output, x, cu, max_tokens);
    g_runtime->kernel(ks::kExpand).launch(call.args(), {"cuda", 0, stream});
  }

  const Api& api;
  DevicePointer output = 0, x = 0, cu = 0;
  int64_t max_tokens = 4;  // the constexpr: another value is another key
};
}  // namespace driver

TEST_CASE(
    "a context of the host's own, destroyed and created again, gets its own "
    "module") {
  // The plugin loads a module once per context. A new context may get the
  // handle of a destroyed one back; the module of the old one must not be
  // used for it (it went with its context). The CUDA 13.0 driver of the
  // H200 gave a handle back within a few rounds of 40, and a module cache
  // keyed by the handle alone then failed the launch with
  // CUDA_ERROR_INVALID_HANDLE.
  const driver::Api api;
  // The platform has initialized the driver and device 0 already.
  std::vector<driver::Context> handles;
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    driver::Context context = nullptr;
    REQUIRE(api.ctx_create(&context, 0, 0) == 0);  // and makes it current
    handles.push_back(context);
    driver::Stream stream = nullptr;
    REQUIRE(api.stream_create(&stream, 0) == 0);
    {
      const driver::ExpandOnDevice expand(api);
      expand.launch(stream);
      REQUIRE(api.stream_synchronize(stream) == 0);
      CHECK(expand.read_output() == std::vector<int32_t>{0, 0, 9, 9, 9, 0});
    }
    CHECK(api.stream_destroy(stream) == 0);
    CHECK(api.ctx_destroy(context) == 0);
  }
  // Whether a handle came back is the driver's choice; say which case ran.
  bool reused = false;
  for (std::size_t i = 1; i < handles.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) reused |= handles[i] == handles[j];
  }
  const std::string outcome =
      std::string("context handles reused: ") + (reused ? "yes" : "no");
  MESSAGE(outcome);
}

TEST_CASE(
    "a launch captured into a CUDA graph runs when the graph is replayed, "
    "with the data the buffers hold then") {
  // What torch.cuda.graph does to a server's decode step: the launches are
  // captured on a stream (in the global mode, which refuses calls that are
  // unsafe during a capture), then replayed. "loaded first" is the usual
  // order (a warm-up run before the capture); otherwise the launch inside
  // the capture is the first in its context, which must load the module.
  const driver::Api api;
  for (const bool loaded_first : {true, false}) {
    CAPTURE(loaded_first);
    driver::Context context = nullptr;
    REQUIRE(api.ctx_create(&context, 0, 0) == 0);  // and makes it current
    driver::Stream stream = nullptr;
    REQUIRE(api.stream_create(&stream, 0) == 0);
    {
      driver::ExpandOnDevice expand(api);
      if (loaded_first) {
        expand.launch(stream);
        REQUIRE(api.stream_synchronize(stream) == 0);
        expand.clear_output();
      }
      REQUIRE(api.begin_capture(stream, driver::Api::kCaptureModeGlobal) == 0);
      std::string launch_error;
      try {
        expand.launch(stream);
      } catch (const std::exception& error) {
        launch_error = error.what();
      }
      driver::Api::Graph graph = nullptr;
      const driver::Result ended = api.end_capture(stream, &graph);
      CHECK_MESSAGE(launch_error.empty(), launch_error);
      REQUIRE(ended == 0);
      driver::Api::GraphExec exec = nullptr;
      REQUIRE(api.graph_instantiate(&exec, graph, 0) == 0);
      // Captured, not run.
      REQUIRE(api.stream_synchronize(stream) == 0);
      CHECK(expand.read_output() == std::vector<int32_t>(6, -7));
      REQUIRE(api.graph_launch(exec, stream) == 0);
      REQUIRE(api.stream_synchronize(stream) == 0);
      CHECK(expand.read_output() == std::vector<int32_t>{0, 0, 9, 9, 9, 0});
      // A replay reads the buffers as they are now.
      expand.set_x({7, 5, 8});
      REQUIRE(api.graph_launch(exec, stream) == 0);
      REQUIRE(api.stream_synchronize(stream) == 0);
      CHECK(expand.read_output() == std::vector<int32_t>{7, 7, 0, 0, 0, 8});
      CHECK(api.graph_exec_destroy(exec) == 0);
      CHECK(api.graph_destroy(graph) == 0);
    }
    CHECK(api.stream_destroy(stream) == 0);
    CHECK(api.ctx_destroy(context) == 0);
  }
}

TEST_CASE(
    "threads launching at once, each on a stream of its own, race through a "
    "key's first compile, preparation and load, and each gets its result") {
  // A server may launch from several threads (a scheduler thread and a
  // forward thread, say). Their first launches of a new key meet in the
  // compile cache, the prepared-launch table and the module cache at once.
  const driver::Api api;
  driver::Context primary = nullptr;
  REQUIRE(api.primary_ctx_retain(&primary, 0) == 0);
  constexpr int kThreads = 8;
  constexpr int kLaunches = 100;
  const uint64_t compiles_before = g_runtime->cache_stats().compiles;
  std::atomic<int> ready{0};
  std::vector<std::vector<int32_t>> outputs(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        REQUIRE(api.ctx_set_current(primary) == 0);
        driver::Stream stream = nullptr;
        REQUIRE(api.stream_create(&stream, 0) == 0);
        {
          driver::ExpandOnDevice expand(api);
          expand.max_tokens = 6;  // a key no other test launches
          expand.set_x({5, 10 + t, 5});
          ready.fetch_add(1);
          while (ready.load() < kThreads) std::this_thread::yield();
          for (int i = 0; i < kLaunches; ++i) expand.launch(stream);
          REQUIRE(api.stream_synchronize(stream) == 0);
          outputs[t] = expand.read_output();
        }
        CHECK(api.stream_destroy(stream) == 0);
      } catch (const std::exception& error) {
        errors[t] = error.what();
      } catch (...) {
        errors[t] = "a failed REQUIRE (reported above)";
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK_MESSAGE(errors[t].empty(), errors[t]);
    const int32_t v = 10 + t;
    CHECK(outputs[t] == std::vector<int32_t>{0, 0, v, v, v, 0});
  }
  // At most one compile for the eight threads' one key (none if a disk
  // cache had it).
  CHECK(g_runtime->cache_stats().compiles - compiles_before <= 1);
  CHECK(api.primary_ctx_release(0) == 0);
}

TEST_CASE(
    "a launch on a stream of a context that is not current runs in the "
    "stream's context") {
  // A host may keep another context current than its stream's (or none):
  // the launch belongs to the stream.
  const driver::Api api;
  driver::Context primary = nullptr;
  REQUIRE(api.primary_ctx_retain(&primary, 0) == 0);
  driver::Context own = nullptr;
  REQUIRE(api.ctx_create(&own, 0, 0) == 0);  // and makes it current
  driver::Stream stream = nullptr;
  REQUIRE(api.stream_create(&stream, 0) == 0);
  {
    driver::ExpandOnDevice expand(api);
    for (const driver::Context current : {primary, driver::Context{}, own}) {
      CAPTURE(current == primary ? "primary"
              : current == own   ? "the stream's"
                                 : "none");
      expand.clear_output();  // the buffers' context is current here
      REQUIRE(api.ctx_set_current(current) == 0);
      expand.launch(stream);
      REQUIRE(api.ctx_set_current(own) == 0);
      REQUIRE(api.stream_synchronize(stream) == 0);
      CHECK(expand.read_output() == std::vector<int32_t>{0, 0, 9, 9, 9, 0});
    }
  }
  CHECK(api.stream_destroy(stream) == 0);
  CHECK(api.ctx_destroy(own) == 0);
  CHECK(api.primary_ctx_release(0) == 0);
}

TEST_CASE(
    "given a key last launched in the primary context, when it is launched "
    "on a stream of another context, captured or not, or on the default "
    "stream with another context current, then each runs where it belongs") {
  // A launch first tries the context its key last ran in, when that is a
  // primary context, without asking which context the stream is in; the
  // driver refuses the function for a stream of another context, and the
  // launch then looks the stream's context up. The refusal must leave a
  // capture of that stream intact.
  const driver::Api api;
  driver::Context primary = nullptr;
  REQUIRE(api.primary_ctx_retain(&primary, 0) == 0);
  driver::Stream primary_stream = nullptr;
  REQUIRE(api.ctx_set_current(primary) == 0);
  REQUIRE(api.stream_create(&primary_stream, 0) == 0);
  driver::Context own = nullptr;
  REQUIRE(api.ctx_create(&own, 0, 0) == 0);  // and makes it current
  driver::Stream own_stream = nullptr;
  REQUIRE(api.stream_create(&own_stream, 0) == 0);
  {
    // Buffers of each context (each its own allocations).
    REQUIRE(api.ctx_set_current(primary) == 0);
    std::optional<driver::ExpandOnDevice> primary_buffers(std::in_place, api);
    driver::ExpandOnDevice& in_primary = *primary_buffers;
    in_primary.max_tokens = 7;  // a key no other test launches
    REQUIRE(api.ctx_set_current(own) == 0);
    std::optional<driver::ExpandOnDevice> own_buffers(std::in_place, api);
    driver::ExpandOnDevice& in_own = *own_buffers;
    in_own.max_tokens = 7;
    const std::vector<int32_t> expected{0, 0, 9, 9, 9, 0};
    const auto run_in_primary = [&] {
      REQUIRE(api.ctx_set_current(primary) == 0);
      in_primary.clear_output();
      in_primary.launch(primary_stream);
      REQUIRE(api.stream_synchronize(primary_stream) == 0);
      CHECK(in_primary.read_output() == expected);
    };
    SUBCASE("a stream of another context") {
      run_in_primary();
      REQUIRE(api.ctx_set_current(own) == 0);
      in_own.clear_output();
      in_own.launch(own_stream);
      REQUIRE(api.stream_synchronize(own_stream) == 0);
      CHECK(in_own.read_output() == expected);
      run_in_primary();  // and back
    }
    SUBCASE("a captured stream of another context") {
      run_in_primary();
      REQUIRE(api.ctx_set_current(own) == 0);
      in_own.clear_output();
      REQUIRE(api.begin_capture(own_stream, driver::Api::kCaptureModeGlobal) ==
              0);
      std::string launch_error;
      try {
        in_own.launch(own_stream);
      } catch (const std::exception& error) {
        launch_error = error.what();
      }
      driver::Api::Graph graph = nullptr;
      const driver::Result ended = api.end_capture(own_stream, &graph);
      CHECK_MESSAGE(launch_error.empty(), launch_error);
      REQUIRE(ended == 0);
      driver::Api::GraphExec exec = nullptr;
      REQUIRE(api.graph_instantiate(&exec, graph, 0) == 0);
      REQUIRE(api.graph_launch(exec, own_stream) == 0);
      REQUIRE(api.stream_synchronize(own_stream) == 0);
      CHECK(in_own.read_output() == expected);
      CHECK(api.graph_exec_destroy(exec) == 0);
      CHECK(api.graph_destroy(graph) == 0);
      run_in_primary();
    }
    SUBCASE("the default stream with another context current") {
      // The default stream's launch runs in the primary context of the
      // tensors' device (the plugin pushes it).
      run_in_primary();
      REQUIRE(api.ctx_set_current(primary) == 0);
      in_primary.clear_output();
      REQUIRE(api.ctx_set_current(own) == 0);
      in_primary.launch(nullptr);
      REQUIRE(api.ctx_set_current(primary) == 0);
      REQUIRE(api.stream_synchronize(nullptr) == 0);
      CHECK(in_primary.read_output() == expected);
    }
    // Each context's buffers are freed with it current.
    REQUIRE(api.ctx_set_current(own) == 0);
    own_buffers.reset();
    REQUIRE(api.ctx_set_current(primary) == 0);
    primary_buffers.reset();
  }
  CHECK(api.stream_destroy(own_stream) == 0);
  CHECK(api.ctx_destroy(own) == 0);
  REQUIRE(api.ctx_set_current(primary) == 0);
  CHECK(api.stream_destroy(primary_stream) == 0);
  CHECK(api.primary_ctx_release(0) == 0);
}

TEST_CASE(
    "a prepared CUDA launch, on the default stream and on a stream of its "
    "own, allocates nothing on the host") {
  const driver::Api api;
  // Device 0's primary context current, as torch keeps it: a test before
  // this one may have left no context current (its own, destroyed).
  driver::Context primary = nullptr;
  REQUIRE(api.primary_ctx_retain(&primary, 0) == 0);
  REQUIRE(api.ctx_set_current(primary) == 0);
  driver::Stream stream = nullptr;
  REQUIRE(api.stream_create(&stream, 0) == 0);
  driver::DevicePointer d_output = 0, d_x = 0, d_cu = 0;
  REQUIRE(api.mem_alloc(&d_output, 64) == 0);
  REQUIRE(api.mem_alloc(&d_x, 16) == 0);
  REQUIRE(api.mem_alloc(&d_cu, 16) == 0);
  const std::vector<int32_t> x{5, 9}, cu{2, 5};
  REQUIRE(api.copy_to_device(d_x, x.data(), 8) == 0);
  REQUIRE(api.copy_to_device(d_cu, cu.data(), 8) == 0);
  auto on_device = [](driver::DevicePointer p, int64_t n) {
    const std::vector<int64_t> shape{n};
    return jitwarm::make_tensor(reinterpret_cast<void*>(p), JW_DTYPE_INT32,
                                shape, 0);
  };
  const jw_tensor t_output = on_device(d_output, 8);
  const jw_tensor t_x = on_device(d_x, 2);
  const jw_tensor t_cu = on_device(d_cu, 2);
  const std::vector<jw_arg_value> args{
      jitwarm::arg(t_output), jitwarm::arg(t_x),   jitwarm::arg(t_cu),
      jitwarm::arg_int(5),    jitwarm::arg_int(0), jitwarm::arg_int(4)};
  const jitwarm::KernelHandle expand = g_runtime->kernel(ks::kExpand);
  for (void* s : {static_cast<void*>(nullptr), static_cast<void*>(stream)}) {
    const jitwarm::LaunchOptions options{"cuda", 0, s};
    expand.launch(args, options);  // prepares (and loads in this context)
    CHECK(jitwarm::test::allocations_of([&] {
            for (int i = 0; i < 200; ++i) expand.launch(args, options);
          }) == 0);
  }
  REQUIRE(api.stream_synchronize(stream) == 0);
  std::vector<int32_t> output(8, -1);
  REQUIRE(api.copy_to_host(output.data(), d_output, 32) == 0);
  CHECK(std::vector<int32_t>(output.begin(), output.begin() + 5) ==
        std::vector<int32_t>{0, 0, 9, 9, 9});
  for (driver::DevicePointer p : {d_output, d_x, d_cu}) {
    CHECK(api.mem_free(p) == 0);
  }
  CHECK(api.stream_destroy(stream) == 0);
  CHECK(api.primary_ctx_release(0) == 0);
}

int main(int argc, char** argv) {
  jitwarm::Runtime runtime;
  runtime.load_plugins();
  bool registered = false;
  bool launchable = false;
  for (const jitwarm::PlatformInfo& p : runtime.platforms()) {
    if (p.name != "cuda") continue;
    registered = true;
    launchable = p.can_launch && p.device_count > 0;
    std::cout << "cuda: " << p.detail << "\n";
  }
  // The plugin is built with this test: not finding it is a failure, not a
  // reason to skip.
  if (!registered) {
    std::cout << "the cuda platform is not registered; load report:\n";
    for (const auto& record : runtime.load_history()) {
      std::cout << "  " << record.path << ": " << record.detail << "\n";
    }
    return 1;
  }
  if (!launchable) {
    std::cout << "no CUDA device: the launch tests are skipped\n";
    return 77;
  }
  std::cout << "target: " << runtime.target_for("cuda", 0) << "\n";
  g_runtime = &runtime;
  doctest::Context context(argc, argv);
  const int status = context.run();
  g_runtime = nullptr;
  return status;
}
