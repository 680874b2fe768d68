// Warmup's end-to-end promise (docs/warmup.md), with the real CPU reference
// plugin: warm the kernel-set manifest, seal with the JIT monitor in error
// mode, then launch every kernel across the dtypes, integer classes and
// alignments the manifest covers — the compile counter must not move — and
// check that an unwarmed key is refused with a message naming it.
#include <doctest/doctest.h>
#include <jitwarm/jitwarm.hpp>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

using namespace jitwarm;

namespace {

// Host memory whose data pointer is 16-byte aligned or deliberately not.
struct HostTensor {
  std::unique_ptr<std::byte[]> storage;
  jw_tensor tensor{};
  HostTensor(jw_dtype dtype, std::vector<int64_t> shape, bool aligned = true) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
    storage.reset(new std::byte[bytes + 64]());
    auto base = reinterpret_cast<uintptr_t>(storage.get());
    base = (base + 15) & ~uintptr_t{15};
    if (!aligned) base += dtype_size(dtype) % 16 == 0 ? 8 : dtype_size(dtype);
    tensor = make_tensor(reinterpret_cast<void*>(base), dtype, shape);
  }
  template <typename T>
  T* data() {
    return static_cast<T*>(tensor.data);
  }
  jw_arg_value arg() const { return jitwarm::arg(tensor); }
};

struct Warmed {
  Runtime runtime{[] {
    RuntimeOptions o;
    o.jit_monitor = JitMonitorMode::error;
    return o;
  }()};
  LaunchOptions cpu;
  uint64_t compiles_after_warmup = 0;
  Warmed() {
    cpu.platform = "cpu";
    REQUIRE(runtime.load_plugin(REFERENCE_PLUGIN).loaded);
    const WarmupResult w = runtime.warmup(
        load_warmup_manifest(KERNEL_SET_MANIFEST).requests, {"cpu", "", 2, {}});
    REQUIRE(w.failed == 0);
    REQUIRE(w.compiled == w.keys.size());
    runtime.seal();
    compiles_after_warmup = runtime.cache_stats().compiles;
  }
  void launch(const char* kernel, std::initializer_list<jw_arg_value> args) {
    runtime.kernel(kernel).launch(args, cpu);
  }
};

const std::array<jw_dtype, 3> kActivations{JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT16,
                                           JW_DTYPE_FLOAT32};

}  // namespace

TEST_CASE(
    "given the warmed kernel set, when every kernel launches across its "
    "classes, then "
    "nothing compiles") {
  Warmed w;
  int launches = 0;

  // rms_norm and silu_and_mul: every dtype, alignment, and class of H and
  // x_stride that valid inputs can have (x_stride >= H).
  for (jw_dtype dtype : kActivations) {
    for (bool aligned : {true, false}) {
      for (auto [h, stride] : {std::pair{1, 1},
                               {16, 16},
                               {17, 17},
                               {1, 16},
                               {16, 17},
                               {1, 17},
                               {17, 32}}) {
        HostTensor x(dtype, {3, stride}, aligned), out(dtype, {3, h}, aligned),
            weight(dtype, {h}, aligned);
        // x's view is [3, h] with row stride `stride`.
        const std::array<int64_t, 2> shape{3, h}, strides{stride, 1};
        jw_tensor view = make_tensor(x.tensor.data, dtype, shape, strides);
        w.launch("vllm.model_executor.layers.layernorm.rms_norm",
                 {out.arg(), arg(view), arg_int(stride), weight.arg(),
                  arg_float(1e-6), arg_int(3), arg_int(h)});
        ++launches;
      }
      for (int h : {1, 16, 17, 4096, 4095}) {
        HostTensor x(dtype, {2, 2 * h}, aligned), out(dtype, {2, h}, aligned);
        w.launch("vllm.model_executor.layers.activation.silu_and_mul",
                 {out.arg(), x.arg(), arg_int(2), arg_int(h)});
        ++launches;
      }
    }
  }

  // compute_slot_mapping: every class of block_size and block_table_stride,
  // positions aligned or not, context parallelism off and on.
  for (int64_t block_size : {1, 16, 17}) {
    for (int64_t stride : {1, 16, 17}) {
      for (bool aligned : {true, false}) {
        for (auto [world, rank] : {std::pair<int64_t, int64_t>{1, 0}, {2, 1}}) {
          HostTensor qsl(JW_DTYPE_INT32, {2}),
              positions(JW_DTYPE_INT64, {2}, aligned),
              table(JW_DTYPE_INT32, {1, stride}), slots(JW_DTYPE_INT64, {4});
          qsl.data<int32_t>()[1] = 2;
          positions.data<int64_t>()[1] = 0;
          w.launch("vllm.v1.worker.block_table.compute_slot_mapping",
                   {qsl.arg(), positions.arg(), table.arg(), arg_int(stride),
                    slots.arg(), arg_int(1), arg_int(4), arg_int(block_size),
                    arg_int(1), arg_int(world), arg_int(rank), arg_int(1)});
          ++launches;
        }
      }
    }
  }

  // expand: each dtype of x, its scalar kind following x.
  for (jw_dtype dtype : {JW_DTYPE_INT32, JW_DTYPE_INT64, JW_DTYPE_FLOAT32}) {
    HostTensor x(dtype, {2}), out(dtype, {4}), cu(JW_DTYPE_INT32, {2});
    cu.data<int32_t>()[0] = 1;
    cu.data<int32_t>()[1] = 3;
    const bool is_float = dtype == JW_DTYPE_FLOAT32;
    w.launch(
        "vllm.v1.sample.rejection_sampler.expand",
        {out.arg(), x.arg(), cu.arg(), is_float ? arg_float(0) : arg_int(0),
         is_float ? arg_float(1) : arg_int(1), arg_int(8)});
    ++launches;
  }

  // batch_memcpy and zero_kv_blocks on host addresses.
  for (int64_t block : {256, 1024}) {
    std::vector<char> src(64, 'a'), dst(64, 0);
    HostTensor s(JW_DTYPE_INT64, {1}), d(JW_DTYPE_INT64, {1}),
        n(JW_DTYPE_INT64, {1});
    s.data<int64_t>()[0] =
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(src.data()));
    d.data<int64_t>()[0] =
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst.data()));
    n.data<int64_t>()[0] = 64;
    w.launch("vllm.v1.worker.mamba_utils.batch_memcpy",
             {s.arg(), d.arg(), n.arg(), arg_int(1), arg_int(block)});
    CHECK(dst[63] == 'a');
    ++launches;
  }
  for (int64_t n_blocks : {1, 16, 7}) {
    std::vector<char> cache(64 * 32, 'x');
    HostTensor ids(JW_DTYPE_INT32, {n_blocks}), addrs(JW_DTYPE_INT64, {1}),
        stride(JW_DTYPE_INT64, {1}), bytes(JW_DTYPE_INT64, {1});
    addrs.data<int64_t>()[0] =
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(cache.data()));
    stride.data<int64_t>()[0] = 64;
    bytes.data<int64_t>()[0] = 64;
    w.launch("vllm.v1.worker.utils.zero_kv_blocks",
             {ids.arg(), addrs.arg(), stride.arg(), bytes.arg(),
              arg_int(n_blocks), arg_int(1)});
    CHECK(cache[0] == 0);
    ++launches;
  }

  // scatter_states: dtype x alignment x stride class x index dtype.
  for (jw_dtype dtype : kActivations) {
    for (bool aligned : {true, false}) {
      for (int64_t stride : {256, 257}) {
        for (jw_dtype index_dtype : {JW_DTYPE_INT32, JW_DTYPE_INT64}) {
          HostTensor state_storage(dtype, {4, stride}, aligned),
              src(dtype, {2, 256}, aligned), indices(index_dtype, {2});
          if (index_dtype == JW_DTYPE_INT32) {
            indices.data<int32_t>()[1] = 2;  // distinct rows 0 and 2
          } else {
            indices.data<int64_t>()[1] = 2;
          }
          const std::array<int64_t, 2> shape{4, 256}, strides{stride, 1};
          jw_tensor state =
              make_tensor(state_storage.tensor.data, dtype, shape, strides);
          w.launch("vllm.model_executor.layers.mamba.ops.scatter_states",
                   {arg(state), arg_int(stride), src.arg(), indices.arg(),
                    arg_int(2), arg_int(256), arg_int(256)});
          ++launches;
        }
      }
    }
  }

  // pack_seq / unpack_seq: every dtype and alignment.
  for (jw_dtype dtype : {JW_DTYPE_FLOAT16, JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT32,
                         JW_DTYPE_UINT8}) {
    for (bool aligned : {true, false}) {
      HostTensor x(dtype, {3, 8}, aligned), lengths(JW_DTYPE_INT32, {2}),
          packed(dtype, {2, 2, 8}, aligned), back(dtype, {3, 8}, aligned);
      lengths.data<int32_t>()[0] = 1;
      lengths.data<int32_t>()[1] = 2;
      w.launch("vllm.v1.attention.ops.pack_seq",
               {x.arg(), lengths.arg(), packed.arg(), arg_int(3), arg_int(8),
                arg_int(2), arg_float(dtype == JW_DTYPE_UINT8 ? 7 : 0.5),
                arg_int(16), arg_int(64)});
      w.launch("vllm.v1.attention.ops.unpack_seq",
               {packed.arg(), lengths.arg(), back.arg(), arg_int(3), arg_int(8),
                arg_int(2), arg_int(16), arg_int(64)});
      CHECK(std::memcmp(back.tensor.data, x.tensor.data,
                        3 * 8 * dtype_size(dtype)) == 0);
      launches += 2;
    }
  }

  // prepare_pos_seq_lens (every integer is do_not_specialize).
  {
    HostTensor idx(JW_DTYPE_INT32, {1}), qsl(JW_DTYPE_INT32, {2}),
        computed(JW_DTYPE_INT32, {1}), seq_lens(JW_DTYPE_INT32, {2}),
        positions(JW_DTYPE_INT64, {3});
    qsl.data<int32_t>()[1] = 3;
    computed.data<int32_t>()[0] = 5;
    w.launch("vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens",
             {idx.arg(), qsl.arg(), computed.arg(), seq_lens.arg(),
              positions.arg(), arg_int(1), arg_int(2)});
    CHECK(seq_lens.data<int32_t>()[0] == 8);
    CHECK(positions.data<int64_t>()[2] == 7);
    ++launches;
  }

  CHECK(launches > 150);
  const CacheStats s = w.runtime.cache_stats();
  CHECK(s.compiles == w.compiles_after_warmup);
  CHECK(s.hits >= static_cast<uint64_t>(launches));
}

TEST_CASE(
    "given the sealed runtime in error mode, when a key outside the manifest "
    "launches, then "
    "it is refused with the key's text") {
  Warmed w;
  std::vector<char> src(8, 'a'), dst(8, 0);
  HostTensor s(JW_DTYPE_INT64, {1}), d(JW_DTYPE_INT64, {1}),
      n(JW_DTYPE_INT64, {1});
  s.data<int64_t>()[0] =
      static_cast<int64_t>(reinterpret_cast<uintptr_t>(src.data()));
  d.data<int64_t>()[0] =
      static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst.data()));
  n.data<int64_t>()[0] = 8;
  const std::array args{s.arg(), d.arg(), n.arg(), arg_int(1),
                        arg_int(512)};  // BLOCK 512: cold
  const KernelHandle k =
      w.runtime.kernel("vllm.v1.worker.mamba_utils.batch_memcpy");
  const CompileKey cold = k.key_for(args, w.cpu);
  try {
    k.launch(args, w.cpu);
    FAIL("expected the JIT monitor to refuse");
  } catch (const Error& e) {
    CHECK(e.status() == JW_ERROR_JIT_REFUSED);
    CHECK(std::string(e.what()).find(cold.text()) != std::string::npos);
  }
  CHECK(dst[0] == 0);  // nothing ran
  CHECK(w.runtime.cache_stats().compiles == w.compiles_after_warmup);
}
