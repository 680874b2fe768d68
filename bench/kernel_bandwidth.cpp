// Bandwidth of the memory-bound kernels of the kernel set on one platform,
// against a device-to-device copy measured in the same run.
//
//   jitwarm-bench-bandwidth --platform cuda [--scale 1.0] [--iterations 20]
//   [--json FILE] [--only KERNEL-SUBSTRING] [--tune]
//
// --tune: each tunable kernel is tuned first on the very arguments it is
// timed with (Runtime::tune, docs/tuning.md), and runs its winner; the
// table names the config.
//
// Each kernel runs on inputs of a few hundred MB to GB (scaled by --scale),
// is warmed first (so no compile is timed), launched once untimed, then
// timed over --iterations launches between two synchronizations. Bytes are
// the bytes the kernel must read plus the bytes it must write; GB/s = bytes
// / time / 1e9. The copy baseline moves a buffer of the largest kernel's
// size with the platform's device-to-device copy and counts read + write.
#include <jitwarm/jitwarm.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace jitwarm;

namespace {

struct Options {
  std::string platform = "cuda";
  int32_t device = 0;
  double scale = 1.0;
  int iterations = 20;
  std::string json_path;
  std::string only;
  bool tune = false;
};

// Device memory through the platform's services.
class DeviceBuffers {
 public:
  DeviceBuffers(const jw_platform_desc& p, int32_t device)
      : p_(p), device_(device) {}
  ~DeviceBuffers() {
    for (void* ptr : owned_) p_.free_memory(p_.user_data, device_, ptr);
  }
  void* allocate(std::size_t bytes) {
    void* ptr = nullptr;
    check(p_.allocate(p_.user_data, device_, bytes, &ptr), "allocate");
    owned_.push_back(ptr);
    return ptr;
  }
  void* upload(const void* host, std::size_t bytes) {
    void* ptr = allocate(bytes);
    check(p_.copy(p_.user_data, device_, ptr, host, bytes,
                  JW_COPY_HOST_TO_DEVICE, nullptr),
          "copy");
    sync();
    return ptr;
  }
  template <typename T>
  void* upload(const std::vector<T>& host) {
    return upload(host.data(), host.size() * sizeof(T));
  }
  void copy_device(void* dst, const void* src, std::size_t bytes) {
    check(p_.copy(p_.user_data, device_, dst, src, bytes,
                  JW_COPY_DEVICE_TO_DEVICE, nullptr),
          "device copy");
  }
  void sync() {
    check(p_.synchronize(p_.user_data, device_, nullptr), "synchronize");
  }

 private:
  static void check(jw_status s, const char* what) {
    if (s != JW_OK)
      throw Error(s,
                  fmt::format("platform {} failed: {}", what, jw_last_error()));
  }
  const jw_platform_desc& p_;
  int32_t device_;
  std::vector<void*> owned_;
};

struct Measurement {
  std::string kernel;
  std::string shape;
  double bytes = 0;
  double seconds = 0;  // per launch
  std::string config;  // the tuned config it ran with (--tune), else empty
  double gbps() const { return bytes / seconds / 1e9; }
};

template <typename Fn>
double time_per_call(DeviceBuffers& mem, int iterations, Fn&& fn) {
  fn();  // untimed: module load, first-touch
  mem.sync();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) fn();
  mem.sync();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count() /
         iterations;
}

jw_tensor device_tensor(void* data, jw_dtype dtype, std::vector<int64_t> shape,
                        int32_t device) {
  return make_tensor(data, dtype, shape, device);
}

int64_t scaled(double base, double scale, int64_t multiple = 1) {
  const auto v = static_cast<int64_t>(base * scale);
  return std::max<int64_t>(multiple, v / multiple * multiple);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value for " + a);
      return argv[++i];
    };
    if (a == "--platform")
      o.platform = next();
    else if (a == "--device")
      o.device = std::stoi(next());
    else if (a == "--scale")
      o.scale = std::stod(next());
    else if (a == "--iterations")
      o.iterations = std::stoi(next());
    else if (a == "--json")
      o.json_path = next();
    else if (a == "--only")
      o.only = next();
    else if (a == "--tune")
      o.tune = true;
    else {
      std::cerr << "usage: jitwarm-bench-bandwidth [--platform P] [--device N] "
                   "[--scale S] "
                   "[--iterations N] [--json FILE] [--only KERNEL-SUBSTRING] "
                   "[--tune]\n";
      return 2;
    }
  }
  try {
    Runtime runtime;
    runtime.load_plugins();
    const jw_platform_desc& platform = runtime.platform(o.platform);
    DeviceBuffers mem(platform, o.device);
    LaunchOptions launch{o.platform, o.device, nullptr};
    std::mt19937 rng(1234);
    std::vector<Measurement> results;
    const int32_t dev = o.device;
    const auto wanted = [&](const std::string& name) {
      return o.only.empty() || name.find(o.only) != std::string::npos;
    };
    // With --tune, each tunable kernel is tuned on these very arguments
    // first (Runtime::tune), and the warmup and the timed launches use the
    // winner, as a tuned server's would.
    WarmupOptions warmup;
    if (o.tune) warmup.device_kind = runtime.device_kind(o.platform, o.device);
    const auto run = [&](const std::string& kernel, const std::string& shape,
                         double bytes, std::vector<jw_arg_value> args) {
      KernelHandle k = runtime.kernel(kernel);
      const CompileKey key = k.key_for(args, launch);
      std::string config;
      if (o.tune && !runtime.tune_candidates(key).empty()) {
        TuneOptions tuning;
        tuning.launch = launch;
        tuning.timed_launches = static_cast<uint32_t>(o.iterations);
        const TuneResult tuned = runtime.tune(kernel, args, tuning);
        std::cerr << tuned.to_text();
        config = tune_config_text(tuned.best);
      }
      runtime.warmup_keys({key}, warmup);
      const uint64_t compiles = runtime.cache_stats().compiles;
      const double s =
          time_per_call(mem, o.iterations, [&] { k.launch(args, launch); });
      if (runtime.cache_stats().compiles != compiles)
        throw std::runtime_error("a timed launch compiled");
      results.push_back(
          {kernel.substr(kernel.rfind('.') + 1), shape, bytes, s, config});
      std::cerr << fmt::format("{:<22} {:<34} {:8.1f} GB/s\n",
                               results.back().kernel, shape,
                               results.back().gbps());
    };

    // rms_norm and silu_and_mul: T x H, in bf16 and fp32.
    const int64_t H = 8192;
    for (const jw_dtype dtype : {JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT32}) {
      if (!wanted("rms_norm") && !wanted("silu_and_mul")) break;
      const std::size_t size = dtype_size(dtype);
      const int64_t T = scaled(size == 2 ? 16384 : 8192, o.scale, 16);
      const char* name = size == 2 ? "bf16" : "fp32";
      // Values in [0.5, 1): bf16 bit patterns, or the same as floats.
      std::vector<uint16_t> x16(static_cast<std::size_t>(T * 2 * H));
      for (auto& v : x16) v = static_cast<uint16_t>(0x3f00 + rng() % 0x100);
      std::vector<float> x32;
      if (size == 4) {
        x32.resize(x16.size());
        for (std::size_t i = 0; i < x16.size(); ++i) {
          const uint32_t bits = static_cast<uint32_t>(x16[i]) << 16;
          std::memcpy(&x32[i], &bits, 4);
        }
      }
      void* dx = size == 2 ? mem.upload(x16) : mem.upload(x32);
      void* dout = mem.allocate(static_cast<std::size_t>(T * H) * size);
      void* dw = size == 2 ? mem.upload(std::vector<uint16_t>(H, 0x3f80))
                           : mem.upload(std::vector<float>(H, 1.0f));
      if (wanted("rms_norm")) {
        jw_tensor out = device_tensor(dout, dtype, {T, H}, dev);
        jw_tensor xt = device_tensor(dx, dtype, {T, H}, dev);
        jw_tensor w = device_tensor(dw, dtype, {H}, dev);
        run("vllm.model_executor.layers.layernorm.rms_norm",
            fmt::format("{} [{}, {}]", name, T, H),
            2.0 * T * H * size + H * size,
            {arg(out), arg(xt), arg_int(H), arg(w), arg_float(1e-6), arg_int(T),
             arg_int(H)});
      }
      if (wanted("silu_and_mul")) {
        jw_tensor out = device_tensor(dout, dtype, {T, H}, dev);
        jw_tensor xt = device_tensor(dx, dtype, {T, 2 * H}, dev);
        run("vllm.model_executor.layers.activation.silu_and_mul",
            fmt::format("{} [{}, 2x{}]", name, T, H), 3.0 * T * H * size,
            {arg(out), arg(xt), arg_int(T), arg_int(H)});
      }
    }

    // batch_memcpy: many ~1 MiB copies, then many 4 KiB copies (some sizes
    // not multiples of 16), between two pools.
    for (const int64_t each : {int64_t{1} << 20, int64_t{4} << 10}) {
      if (!wanted("batch_memcpy")) break;
      const int64_t copies = scaled(each == (1 << 20) ? 512 : 131072, o.scale);
      char* src = static_cast<char*>(
          mem.allocate(static_cast<std::size_t>(copies * each)));
      char* dst = static_cast<char*>(
          mem.allocate(static_cast<std::size_t>(copies * each)));
      std::vector<int64_t> s(copies), d(copies), n(copies);
      double bytes = 0;
      for (int64_t i = 0; i < copies; ++i) {
        s[i] =
            static_cast<int64_t>(reinterpret_cast<uintptr_t>(src + i * each));
        d[i] = static_cast<int64_t>(
            reinterpret_cast<uintptr_t>(dst + (copies - 1 - i) * each));
        n[i] = each - (i % 3) * 7;
        bytes += 2.0 * static_cast<double>(n[i]);
      }
      jw_tensor ts =
          device_tensor(mem.upload(s), JW_DTYPE_INT64, {copies}, dev);
      jw_tensor td =
          device_tensor(mem.upload(d), JW_DTYPE_INT64, {copies}, dev);
      jw_tensor tn =
          device_tensor(mem.upload(n), JW_DTYPE_INT64, {copies}, dev);
      run("vllm.v1.worker.mamba_utils.batch_memcpy",
          fmt::format("{} x ~{} KiB", copies, each >> 10), bytes,
          {arg(ts), arg(td), arg(tn), arg_int(copies), arg_int(1024)});
    }

    // zero_kv_blocks: 2 segments of 64 KiB blocks.
    if (wanted("zero_kv_blocks")) {
      const int64_t blocks = scaled(4096, o.scale, 16), block_bytes = 64 << 10,
                    segments = 2;
      char* cache = static_cast<char*>(mem.allocate(
          static_cast<std::size_t>(segments * blocks * block_bytes)));
      std::vector<int32_t> ids(blocks);
      for (int64_t i = 0; i < blocks; ++i)
        ids[i] = static_cast<int32_t>((i * 7919) % blocks);
      std::vector<int64_t> addrs{
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(cache)),
          static_cast<int64_t>(
              reinterpret_cast<uintptr_t>(cache + blocks * block_bytes))};
      std::vector<int64_t> strides(segments, block_bytes),
          bytes_per(segments, block_bytes);
      jw_tensor tids =
          device_tensor(mem.upload(ids), JW_DTYPE_INT32, {blocks}, dev);
      jw_tensor ta =
          device_tensor(mem.upload(addrs), JW_DTYPE_INT64, {segments}, dev);
      jw_tensor ts =
          device_tensor(mem.upload(strides), JW_DTYPE_INT64, {segments}, dev);
      jw_tensor tb =
          device_tensor(mem.upload(bytes_per), JW_DTYPE_INT64, {segments}, dev);
      run("vllm.v1.worker.utils.zero_kv_blocks",
          fmt::format("2 x {} x 64 KiB", blocks),
          static_cast<double>(segments * blocks * block_bytes),
          {arg(tids), arg(ta), arg(ts), arg(tb), arg_int(blocks),
           arg_int(segments)});
    }

    // scatter_states: fp32 rows of 4096, every other destination row.
    if (wanted("scatter_states")) {
      const int64_t rows = scaled(32768, o.scale, 16), row = 4096;
      void* state = mem.allocate(static_cast<std::size_t>(2 * rows * row * 4));
      void* src = mem.upload(
          std::vector<float>(static_cast<std::size_t>(rows * row), 1.5f));
      std::vector<int64_t> idx(rows);
      for (int64_t i = 0; i < rows; ++i) idx[i] = 2 * ((i * 48271) % rows);
      jw_tensor ts =
          device_tensor(state, JW_DTYPE_FLOAT32, {2 * rows, row}, dev);
      jw_tensor tsrc = device_tensor(src, JW_DTYPE_FLOAT32, {rows, row}, dev);
      jw_tensor ti =
          device_tensor(mem.upload(idx), JW_DTYPE_INT64, {rows}, dev);
      run("vllm.model_executor.layers.mamba.ops.scatter_states",
          fmt::format("fp32 {} rows x {}", rows, row),
          2.0 * rows * row * 4 + rows * 8,
          {arg(ts), arg_int(row), arg(tsrc), arg(ti), arg_int(rows),
           arg_int(row), arg_int(1024)});
    }

    // pack_seq / unpack_seq: bf16, D = 4096, lengths up to L_max.
    if (wanted("pack_seq")) {
      const int64_t B = scaled(256, o.scale), L = 512, D = 4096;
      std::vector<int32_t> lengths(B);
      int64_t N = 0;
      for (int64_t b = 0; b < B; ++b)
        N += lengths[b] = static_cast<int32_t>(L / 2 + rng() % (L / 2 + 1));
      void* x = mem.upload(
          std::vector<uint16_t>(static_cast<std::size_t>(N * D), 0x3f80));
      void* packed = mem.allocate(static_cast<std::size_t>(B * L * D * 2));
      void* back = mem.allocate(static_cast<std::size_t>(N * D * 2));
      jw_tensor tl =
          device_tensor(mem.upload(lengths), JW_DTYPE_INT32, {B}, dev);
      jw_tensor tx = device_tensor(x, JW_DTYPE_BFLOAT16, {N, D}, dev);
      jw_tensor tp = device_tensor(packed, JW_DTYPE_BFLOAT16, {B, L, D}, dev);
      jw_tensor tb = device_tensor(back, JW_DTYPE_BFLOAT16, {N, D}, dev);
      run("vllm.v1.attention.ops.pack_seq",
          fmt::format("bf16 B={} L={} D={}", B, L, D),
          2.0 * N * D + 2.0 * B * L * D,
          {arg(tx), arg(tl), arg(tp), arg_int(N), arg_int(D), arg_int(L),
           arg_float(0), arg_int(16), arg_int(256)});
      run("vllm.v1.attention.ops.unpack_seq",
          fmt::format("bf16 B={} L={} D={}", B, L, D), 4.0 * N * D,
          {arg(tp), arg(tl), arg(tb), arg_int(N), arg_int(D), arg_int(L),
           arg_int(16), arg_int(256)});
    }

    // Token-level bookkeeping kernels: many requests, several tokens each.
    if (wanted("expand") || wanted("slot_mapping") || wanted("prepare_pos")) {
      const int64_t R = scaled(1 << 20, o.scale, 16), per = 8, tokens = R * per;
      std::vector<int32_t> qsl(R + 1), cu(R), idx(R), computed(R);
      for (int64_t r = 0; r <= R; ++r) qsl[r] = static_cast<int32_t>(r * per);
      for (int64_t r = 0; r < R; ++r) {
        cu[r] = static_cast<int32_t>((r + 1) * per);
        idx[r] = static_cast<int32_t>(r);
        computed[r] = static_cast<int32_t>(rng() % 4096);
      }
      jw_tensor tq =
          device_tensor(mem.upload(qsl), JW_DTYPE_INT32, {R + 1}, dev);
      if (wanted("expand")) {
        jw_tensor tx = device_tensor(mem.upload(std::vector<int32_t>(R, 3)),
                                     JW_DTYPE_INT32, {R}, dev);
        jw_tensor tc = device_tensor(mem.upload(cu), JW_DTYPE_INT32, {R}, dev);
        jw_tensor tout = device_tensor(mem.allocate(tokens * 4), JW_DTYPE_INT32,
                                       {tokens}, dev);
        run("vllm.v1.sample.rejection_sampler.expand",
            fmt::format("int32 {} req x {}", R, per), 4.0 * tokens + 8.0 * R,
            {arg(tout), arg(tx), arg(tc), arg_int(-1), arg_int(0),
             arg_int(per)});
      }
      if (wanted("prepare_pos")) {
        jw_tensor ti = device_tensor(mem.upload(idx), JW_DTYPE_INT32, {R}, dev);
        jw_tensor tn =
            device_tensor(mem.upload(computed), JW_DTYPE_INT32, {R}, dev);
        jw_tensor ts =
            device_tensor(mem.allocate(R * 4), JW_DTYPE_INT32, {R}, dev);
        jw_tensor tp = device_tensor(mem.allocate(tokens * 8), JW_DTYPE_INT64,
                                     {tokens}, dev);
        run("vllm.v1.worker.gpu.input_batch.prepare_pos_seq_lens",
            fmt::format("{} req x {}", R, per), 8.0 * tokens + 16.0 * R,
            {arg(ti), arg(tq), arg(tn), arg(ts), arg(tp), arg_int(R),
             arg_int(R)});
      }
      if (wanted("slot_mapping")) {
        const int64_t blocks_per_req = 64, bs = 16;
        std::vector<int32_t> table(
            static_cast<std::size_t>(R * blocks_per_req));
        for (auto& v : table) v = static_cast<int32_t>(rng() % 100000);
        jw_tensor tt = device_tensor(mem.upload(table), JW_DTYPE_INT32,
                                     {R, blocks_per_req}, dev);
        jw_tensor ts = device_tensor(mem.allocate(tokens * 8), JW_DTYPE_INT64,
                                     {tokens}, dev);
        // Two kinds of positions, 4 bytes of block table counted per token.
        // Random ones (each token at any position from 0 to 518): a
        // token's entry is mostly in a 32-byte sector of its own, so about
        // 3.6 sectors per request move where 32 bytes are counted, which
        // bounds the ratio at about 0.66x. Consecutive ones, as a server
        // makes them (a request's tokens follow its computed tokens): its
        // tokens share one or two entries, mostly one sector.
        std::vector<int64_t> random_pos(tokens), consecutive_pos(tokens);
        for (int64_t t = 0; t < tokens; ++t)
          random_pos[t] = (t % per) + (rng() % 512);
        for (int64_t r = 0; r < R; ++r) {
          const int64_t computed = rng() % (blocks_per_req * bs - per + 1);
          for (int64_t t = 0; t < per; ++t)
            consecutive_pos[r * per + t] = computed + t;
        }
        for (const auto& [positions, kind] :
             {std::pair{&random_pos, "tokens"},
              std::pair{&consecutive_pos, "consecutive"}}) {
          jw_tensor tp = device_tensor(mem.upload(*positions), JW_DTYPE_INT64,
                                       {tokens}, dev);
          run("vllm.v1.worker.block_table.compute_slot_mapping",
              fmt::format("{} req x {} {}", R, per, kind),
              16.0 * tokens + 4.0 * tokens + 4.0 * R,
              {arg(tq), arg(tp), arg(tt), arg_int(blocks_per_req), arg(ts),
               arg_int(R), arg_int(tokens), arg_int(bs)});
        }
      }
    }

    // The baseline: a device-to-device copy of 1 GiB (x scale), read + write.
    const std::size_t copy_bytes =
        static_cast<std::size_t>(scaled(1 << 30, o.scale, 1 << 20));
    void* a = mem.allocate(copy_bytes);
    void* b = mem.allocate(copy_bytes);
    const double copy_seconds = time_per_call(
        mem, o.iterations, [&] { mem.copy_device(b, a, copy_bytes); });
    const double copy_gbps =
        2.0 * static_cast<double>(copy_bytes) / copy_seconds / 1e9;

    std::cout << fmt::format(
        "\nplatform {} ({}), {} iterations; device-to-device copy of {} MiB: "
        "{:.1f} GB/s (read + write)\n\n",
        o.platform, runtime.target_for(o.platform, o.device), o.iterations,
        copy_bytes >> 20, copy_gbps);
    std::cout << fmt::format(
        "| {:<22} | {:<34} | {:>9} | {:>9} | {:>8} | {:>7} |\n", "kernel",
        "shape", "MB moved", "time (us)", "GB/s", "vs copy");
    std::cout << "|" << std::string(24, '-') << "|" << std::string(36, '-')
              << "|" << std::string(11, '-') << "|" << std::string(11, '-')
              << "|" << std::string(10, '-') << "|" << std::string(9, '-')
              << "|\n";
    nlohmann::json j;
    j["platform"] = o.platform;
    j["target"] = runtime.target_for(o.platform, o.device);
    j["iterations"] = o.iterations;
    j["copy_gbps"] = copy_gbps;
    j["copy_bytes"] = copy_bytes;
    j["kernels"] = nlohmann::json::array();
    for (const auto& m : results) {
      std::cout << fmt::format(
          "| {:<22} | {:<34} | {:>9.1f} | {:>9.1f} | {:>8.1f} | {:>6.2f}x "
          "|{}\n",
          m.kernel, m.shape, m.bytes / 1e6, m.seconds * 1e6, m.gbps(),
          m.gbps() / copy_gbps, m.config.empty() ? "" : " " + m.config);
      j["kernels"].push_back({{"kernel", m.kernel},
                              {"shape", m.shape},
                              {"bytes", m.bytes},
                              {"seconds", m.seconds},
                              {"gbps", m.gbps()},
                              {"ratio_to_copy", m.gbps() / copy_gbps},
                              {"config", m.config}});
    }
    if (!o.json_path.empty()) std::ofstream(o.json_path) << j.dump(2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "jitwarm-bench-bandwidth: " << e.what() << "\n";
    return 1;
  }
}
