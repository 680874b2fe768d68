// Bandwidth of the memory-bound kernels of the CUDA plugin against a
// device-to-device copy on the same GPU (KERNELS.md: "judged by bandwidth
// against a device-to-device copy"). Bytes are those a kernel must read plus
// those it must write; each row prints GB/s and the ratio to the copy.
//
// It drives the plugin's GpuBackend directly (keys from the core's
// derive_key, memory from the CUDA driver), so it measures the kernels and
// the plugin's launch path, not the core's dispatch. A benchmark, not a
// test: it exits 77 without a CUDA device.
#include <jitwarm/jitwarm.hpp>

#include "cuda_device_driver.hpp"
#include "cuda_target.hpp"
#include "gpu_backend.hpp"
#include "kernel_set.hpp"
#include "nvrtc_compiler.hpp"
#include "plugin_support.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

JITWARM_DEFINE_PLUGIN_HOST_API()

namespace ks = jitwarm::kernel_set;
namespace gpu = jitwarm::gpu;

namespace {

gpu::GpuBackend* g_backend = nullptr;
std::string g_target;
uint64_t g_next_artifact_id = 1;

gpu::DeviceDriver& driver() {
  return g_backend->driver();
}

// A jw_compile_key_view that owns everything it points to.
class OwnedKeyView {
 public:
  explicit OwnedKeyView(const jitwarm::CompileKey& key)
      : key_(key), text_(key.text()) {
    for (const jitwarm::ParamSpec& p : key_.params()) {
      jw_param_spec s{};
      s.struct_size = sizeof(s);
      s.name = p.name.c_str();
      s.kind = p.kind;
      s.dtype = p.dtype;
      s.alignment = p.alignment;
      s.int_spec = {p.int_spec.type, p.int_spec.value_class};
      s.float_type = p.float_type;
      s.scalar_kind = p.scalar_kind;
      s.constexpr_value = p.constexpr_value;
      specs_.push_back(s);
    }
    view_.struct_size = sizeof(view_);
    view_.kernel_name = key_.kernel_name().c_str();
    view_.impl_name = key_.impl_name().c_str();
    view_.target = key_.target().c_str();
    view_.params = specs_.data();
    view_.num_params = static_cast<uint32_t>(specs_.size());
    view_.text = text_.c_str();
  }
  const jw_compile_key_view& view() const { return view_; }

 private:
  jitwarm::CompileKey key_;
  std::string text_;
  std::vector<jw_param_spec> specs_;
  jw_compile_key_view view_{};
};

// One kernel with fixed arguments, compiled once and launched repeatedly.
class Launcher {
 public:
  Launcher(std::string_view kernel, std::vector<jw_arg_value> args)
      : args_(std::move(args)),
        key_(jitwarm::derive_key(
            jitwarm::KernelSchema::from_c(*ks::find_schema(kernel), "bench"),
            args_, g_target, "cuda-nvrtc")),
        compiled_(g_backend->compile(key_.view())) {
    artifact_.struct_size = sizeof(artifact_);
    artifact_.key = &key_.view();
    artifact_.binary = compiled_->binary.data();
    artifact_.binary_size = compiled_->binary.size();
    artifact_.format = compiled_->format.c_str();
    artifact_.entry_point = compiled_->entry_point.c_str();
    artifact_.artifact_id = g_next_artifact_id++;
  }
  void operator()() { g_backend->launch(artifact_, args_, nullptr); }

 private:
  std::vector<jw_arg_value> args_;
  OwnedKeyView key_;
  std::shared_ptr<const gpu::CompiledKernel> compiled_;
  jw_artifact_view artifact_{};
};

// Device memory filled with a repeating byte: 0x3c3c... is a small finite
// value as fp16, bf16 and fp32.
struct DeviceMemory {
  void* data = nullptr;
  std::size_t bytes = 0;
  explicit DeviceMemory(std::size_t n, unsigned char fill = 0x3c) : bytes(n) {
    data = driver().allocate(0, n);
    std::vector<unsigned char> host(std::min<std::size_t>(n, 64 << 20), fill);
    for (std::size_t at = 0; at < n; at += host.size()) {
      driver().copy(0, static_cast<char*>(data) + at, host.data(),
                    std::min(host.size(), n - at), JW_COPY_HOST_TO_DEVICE,
                    nullptr);
    }
    driver().synchronize(0, nullptr);
  }
  ~DeviceMemory() { driver().free_memory(0, data); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void upload(const void* host, std::size_t n) {
    driver().copy(0, data, host, n, JW_COPY_HOST_TO_DEVICE, nullptr);
    driver().synchronize(0, nullptr);
  }
  jw_tensor tensor(jw_dtype dtype, std::vector<int64_t> shape) const {
    return jitwarm::make_tensor(data, dtype, shape, 0);
  }
  int64_t address() const {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(data));
  }
};

// Median seconds per call of `body` (each call synchronized), after one
// call that loads the module.
double seconds_per_call(const std::function<void()>& body) {
  body();
  driver().synchronize(0, nullptr);
  std::vector<double> samples;
  double total = 0;
  while (samples.size() < 5 || (total < 0.3 && samples.size() < 200)) {
    const auto start = std::chrono::steady_clock::now();
    body();
    driver().synchronize(0, nullptr);
    samples.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    total += samples.back();
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double g_copy_bandwidth = 0;  // bytes read + written per second

void report(const std::string& what, double bytes, double seconds) {
  const double bandwidth = bytes / seconds;
  std::printf("%-52s %9.1f MB %9.1f us %8.1f GB/s %6.1f%% of copy\n",
              what.c_str(), bytes / 1e6, seconds * 1e6, bandwidth / 1e9,
              100.0 * bandwidth / g_copy_bandwidth);
  std::fflush(stdout);
}

void bench(const std::string& what, double bytes, std::string_view kernel,
           std::vector<jw_arg_value> args) {
  Launcher launcher(kernel, std::move(args));
  report(what, bytes, seconds_per_call([&] { launcher(); }));
}

int run() {
  using jitwarm::arg;
  using jitwarm::arg_float;
  using jitwarm::arg_int;
  {  // The baseline: a device-to-device copy of 1 GiB.
    const std::size_t n = std::size_t{1} << 30;
    DeviceMemory a(n), b(n);
    const double seconds = seconds_per_call([&] {
      driver().copy(0, b.data, a.data, n, JW_COPY_DEVICE_TO_DEVICE, nullptr);
    });
    g_copy_bandwidth = 2.0 * n / seconds;
    report("device-to-device copy 1 GiB", 2.0 * n, seconds);
  }

  for (jw_dtype dtype : {JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT32}) {
    const char* name = dtype == JW_DTYPE_BFLOAT16 ? "bf16" : "f32";
    const std::size_t e = jitwarm::dtype_size(dtype);
    for (int64_t hidden : {4096, 8192, 1000}) {
      const int64_t rows = (int64_t{1} << 28) / (hidden * 4);
      DeviceMemory x(rows * hidden * e), out(rows * hidden * e), w(hidden * e);
      const jw_tensor tx = x.tensor(dtype, {rows, hidden});
      const jw_tensor to = out.tensor(dtype, {rows, hidden});
      const jw_tensor tw = w.tensor(dtype, {hidden});
      bench("rms_norm " + std::string(name) + " [" + std::to_string(rows) +
                ", " + std::to_string(hidden) + "]",
            2.0 * rows * hidden * e + hidden * e, ks::kRmsNorm,
            {arg(to), arg(tx), arg_int(hidden), arg(tw), arg_float(1e-6),
             arg_int(rows), arg_int(hidden)});
    }
  }

  for (jw_dtype dtype : {JW_DTYPE_BFLOAT16, JW_DTYPE_FLOAT32}) {
    const char* name = dtype == JW_DTYPE_BFLOAT16 ? "bf16" : "f32";
    const std::size_t e = jitwarm::dtype_size(dtype);
    for (int64_t hidden : {11008, 4096, 1000}) {
      const int64_t rows = (int64_t{1} << 27) / hidden;
      DeviceMemory x(rows * 2 * hidden * e), out(rows * hidden * e);
      const jw_tensor tx = x.tensor(dtype, {rows, 2 * hidden});
      const jw_tensor to = out.tensor(dtype, {rows, hidden});
      bench("silu_and_mul " + std::string(name) + " [" + std::to_string(rows) +
                ", " + std::to_string(hidden) + "]",
            3.0 * rows * hidden * e, ks::kSiluAndMul,
            {arg(to), arg(tx), arg_int(rows), arg_int(hidden)});
    }
  }

  for (const auto& [copies, size] : {std::pair<int64_t, int64_t>{64, 8 << 20},
                                     {1, 512 << 20},
                                     {4096, 64 << 10},
                                     {16384, 4 << 10}}) {
    DeviceMemory src(copies * size), dst(copies * size);
    std::vector<int64_t> s, d, n;
    for (int64_t c = 0; c < copies; ++c) {
      s.push_back(src.address() + c * size);
      d.push_back(dst.address() + c * size);
      n.push_back(size);
    }
    DeviceMemory sp(copies * 8), dp(copies * 8), np(copies * 8);
    sp.upload(s.data(), copies * 8);
    dp.upload(d.data(), copies * 8);
    np.upload(n.data(), copies * 8);
    const jw_tensor ts = sp.tensor(JW_DTYPE_INT64, {copies});
    const jw_tensor td = dp.tensor(JW_DTYPE_INT64, {copies});
    const jw_tensor tn = np.tensor(JW_DTYPE_INT64, {copies});
    bench("batch_memcpy " + std::to_string(copies) + " x " +
              std::to_string(size >> 10) + " KiB",
          2.0 * copies * size, ks::kBatchMemcpy,
          {arg(ts), arg(td), arg(tn), arg_int(copies), arg_int(1024)});
  }

  for (int64_t row : {65536, 1024}) {  // bf16 rows into a 2x larger state
    const int64_t rows = (int64_t{256} << 20) / (row * 2);
    const int64_t state_rows = 2 * rows;
    DeviceMemory state(state_rows * row * 2), src(rows * row * 2),
        indices(rows * 8);
    std::vector<int64_t> idx(rows);
    for (int64_t i = 0; i < rows; ++i) idx[i] = (i * 2 + 1) % state_rows;
    indices.upload(idx.data(), rows * 8);
    const jw_tensor tstate = state.tensor(JW_DTYPE_BFLOAT16, {state_rows, row});
    const jw_tensor tsrc = src.tensor(JW_DTYPE_BFLOAT16, {rows, row});
    const jw_tensor tidx = indices.tensor(JW_DTYPE_INT64, {rows});
    bench("scatter_states bf16 " + std::to_string(rows) + " rows x " +
              std::to_string(row),
          2.0 * rows * row * 2, ks::kScatterStates,
          {arg(tstate), arg_int(row), arg(tsrc), arg(tidx), arg_int(rows),
           arg_int(row), arg_int(1024)});
  }

  {  // zero_kv_blocks: 2 segments x 8192 blocks of 64 KiB (writes only)
    const int64_t blocks = 8192, block_bytes = 64 << 10, segments = 2;
    DeviceMemory k(blocks * block_bytes), v(blocks * block_bytes);
    DeviceMemory ids(blocks * 4), addrs(16), strides(16), sizes(16);
    std::vector<int32_t> id(blocks);
    for (int64_t b = 0; b < blocks; ++b) id[b] = static_cast<int32_t>(b);
    ids.upload(id.data(), blocks * 4);
    const int64_t a[2] = {k.address(), v.address()};
    const int64_t st[2] = {block_bytes, block_bytes};
    addrs.upload(a, 16);
    strides.upload(st, 16);
    sizes.upload(st, 16);
    bench("zero_kv_blocks 2 x 8192 x 64 KiB", 2.0 * blocks * block_bytes,
          ks::kZeroKvBlocks,
          {arg(ids.tensor(JW_DTYPE_INT32, {blocks})),
           arg(addrs.tensor(JW_DTYPE_INT64, {segments})),
           arg(strides.tensor(JW_DTYPE_INT64, {segments})),
           arg(sizes.tensor(JW_DTYPE_INT64, {segments})), arg_int(blocks),
           arg_int(segments)});
  }

  {  // pack/unpack bf16: 64 requests of 768 tokens padded to 1024, D 2048
    const int64_t batch = 64, l_max = 1024, d = 2048, n = batch * 768;
    DeviceMemory flat(n * d * 2), padded(batch * l_max * d * 2),
        lengths(batch * 4);
    std::vector<int32_t> len(batch, 768);
    lengths.upload(len.data(), batch * 4);
    const jw_tensor tflat = flat.tensor(JW_DTYPE_BFLOAT16, {n, d});
    const jw_tensor tpadded =
        padded.tensor(JW_DTYPE_BFLOAT16, {batch, l_max, d});
    const jw_tensor tlen = lengths.tensor(JW_DTYPE_INT32, {batch});
    bench("pack_seq bf16 64 x 1024 (768 real) x 2048",
          n * d * 2.0 + batch * l_max * d * 2.0, ks::kPackSeq,
          {arg(tflat), arg(tlen), arg(tpadded), arg_int(n), arg_int(d),
           arg_int(l_max), arg_float(0.0), arg_int(16), arg_int(256)});
    bench("unpack_seq bf16 64 x 1024 (768 real) x 2048", 2.0 * n * d * 2.0,
          ks::kUnpackSeq,
          {arg(tpadded), arg(tlen), arg(tflat), arg_int(n), arg_int(d),
           arg_int(l_max), arg_int(16), arg_int(256)});
  }
  return 0;
}

}  // namespace

int main() {
  std::string why_not;
  auto nvrtc = jitwarm::cuda::NvrtcCompiler::open(why_not);
  auto cuda_driver = std::make_unique<jitwarm::cuda::CudaDeviceDriver>();
  if (nvrtc == nullptr || cuda_driver->device_count() == 0) {
    std::printf("no CUDA device or no NVRTC (%s): benchmark skipped\n",
                why_not.c_str());
    return 77;
  }
  g_target = "cuda:" + cuda_driver->device_arch(0);
  gpu::GpuBackendDescription description;
  description.plugin_name = "jitwarm-cuda";
  description.platform = "cuda";
  description.impl_name = "cuda-nvrtc";
  description.compiler_label = "NVRTC";
  description.parse_target = &jitwarm::cuda::parse_cuda_target;
  gpu::GpuBackend backend(std::move(description), std::move(nvrtc), "",
                          std::move(cuda_driver));
  g_backend = &backend;
  std::printf("target %s\n", g_target.c_str());
  int status = 1;
  try {
    status = run();
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
  }
  backend.shutdown();
  return status;
}
