// token_kernel_variants.cu — the token-level kernels (expand,
// prepare_pos_seq_lens, compute_slot_mapping) of plugins/common/kernels
// outside jitwarm: compiled with nvcc, launched as their descriptors launch
// them (launch_* below mirror the .toml files' [launch] rules; keep them
// in step), checked against a CPU reference on shapes of every kind
// (unaligned tensors, grids of 1 and 3 blocks that must stride, positions
// and block sizes past 2^31), then timed at jitwarm-bench-bandwidth's
// shapes (1048576 requests x 8 tokens, the bench's byte counts) beside a
// 1 GiB device-to-device copy, with variants of the launch (lanes per
// request, threads per block, requests per group, grid cap) and of the
// compile (vectors or not): the tool to choose the descriptors' launch by;
// the numbers of record are the bench's (docs/results/token-kernels.md).
//
// The Meson build compiles kernels with NVRTC only (no nvcc), so this file
// is not part of it. From the repository root, on a machine with nvcc
// (a GPU is needed only to run it):
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I plugins/common/kernels \
//     bench/token_kernel_variants.cu -o token_kernel_variants
//   ./token_kernel_variants [--iterations 30] [--rounds 5] [--tests]
//
// --tests runs the checks alone. Prints FAIL lines and exits 1 on a wrong
// result. On the GPU machine, `bash scripts/device-run.sh token-variants`
// builds and runs it.
#include "compute_slot_mapping.cuh"
#include "expand.cuh"
#include "prepare_pos_seq_lens.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

using jw::i32;
using jw::i64;

int failures = 0;
int sm_count = 0;
int max_threads_per_sm = 0;

#define CHECK_CUDA(call)                                                 \
  do {                                                                   \
    const cudaError_t e_ = (call);                                       \
    if (e_ != cudaSuccess) {                                             \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(e_));                              \
      std::exit(2);                                                      \
    }                                                                    \
  } while (0)

template <typename T>
struct Buffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit Buffer(size_t count, size_t pad = 0) : n(count) {
    CHECK_CUDA(cudaMalloc(&ptr, (count + pad) * sizeof(T) + 16));
  }
  Buffer(const std::vector<T>& host) : Buffer(host.size()) { upload(host); }
  ~Buffer() { cudaFree(ptr); }
  Buffer(const Buffer&) = delete;
  void upload(const std::vector<T>& host) {
    CHECK_CUDA(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T),
                          cudaMemcpyHostToDevice));
  }
  std::vector<T> download(size_t count, size_t offset = 0) const {
    std::vector<T> host(count);
    CHECK_CUDA(cudaMemcpy(host.data(), ptr + offset, count * sizeof(T),
                          cudaMemcpyDeviceToHost));
    return host;
  }
  void poison() { CHECK_CUDA(cudaMemset(ptr, 0xA5, n * sizeof(T) + 16)); }
};

unsigned lanes_for(long long n) {
  unsigned lanes = 1;
  while (lanes < n && lanes < 32) lanes *= 2;
  return lanes;
}
long long ceil_div(long long a, long long b) {
  return (a + b - 1) / b;
}

// How a launch is shaped: lanes per request (0: the descriptor's rule),
// threads per block, and a grid cap in blocks per SM (0: no cap but the
// device's).
struct Shape {
  unsigned lanes = 0;
  unsigned threads = 256;
  int blocks_per_sm = -1;       // -1: the descriptor's cap; 0: none
  long long grid_override = 0;  // tests: a capped grid must stride
};

long long capped_grid(long long blocks, const Shape& s,
                      int descriptor_blocks_per_sm = 0) {
  if (s.grid_override > 0) return std::min(blocks, s.grid_override);
  const int per_sm =
      s.blocks_per_sm < 0 ? descriptor_blocks_per_sm : s.blocks_per_sm;
  if (per_sm > 0) blocks = std::min<long long>(blocks, 1LL * per_sm * sm_count);
  return std::min<long long>(blocks, 2147483647LL);
}

// ---------------------------------------------------------------- expand
template <typename T, typename TR, long long kMax, bool kVec, int kR>
void launch_expand(T* out, const T* x, const i32* cu, TR from, TR to,
                   long long batch, Shape s, cudaStream_t stream = 0) {
  constexpr long long per_vector = kVec ? 16 / sizeof(T) : 1;
  const unsigned lanes =
      s.lanes ? s.lanes : lanes_for(ceil_div(kMax, per_vector));
  const unsigned rpb = std::max(1u, s.threads / lanes);
  const long long grid = capped_grid(ceil_div(batch, 1LL * rpb * kR), s, 8);
  if (grid == 0) return;
  jw::kernels::expand<T, TR, TR, kMax, kVec, kR>
      <<<dim3(grid), dim3(lanes, rpb), 0, stream>>>(out, x, cu, from, to,
                                                    batch);
}

template <typename T>
bool equals_value(T element, T from) {
  return element == from;
}

template <typename T, typename TR, long long kMax, bool kVec>
void test_expand(std::mt19937& rng, long long batch, int max_tokens, Shape s,
                 const char* what) {
  std::vector<i32> cu(batch);
  std::vector<T> x(batch);
  long long total = 0;
  for (long long b = 0; b < batch; ++b) {
    total += rng() % (max_tokens + 1);
    cu[b] = static_cast<i32>(total);
    x[b] = static_cast<T>(static_cast<int>(rng() % 4));
  }
  const TR from = static_cast<TR>(2), to = static_cast<TR>(7);
  // Misaligned tests offset the output by one element (kVec false then).
  const size_t offset = kVec ? 0 : 1;
  Buffer<T> out(total + offset + 8);
  out.poison();
  std::vector<T> before = out.download(out.n);
  Buffer<i32> dcu(std::max<long long>(batch, 1));
  Buffer<T> dx(std::max<long long>(batch, 1));
  if (batch > 0) {
    dcu.upload(cu);
    dx.upload(x);
  }
  launch_expand<T, TR, kMax, kVec, 4>(out.ptr + offset, dx.ptr, dcu.ptr, from,
                                      to, batch, s);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<T> got = out.download(out.n);
  std::vector<T> want = before;
  long long start = 0;
  for (long long b = 0; b < batch; ++b) {
    T v = x[b];
    if (equals_value(v, static_cast<T>(from))) v = static_cast<T>(to);
    for (long long t = start; t < cu[b]; ++t) want[offset + t] = v;
    start = cu[b];
  }
  if (std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) != 0) {
    long long i = 0;
    while (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) ++i;
    std::printf("FAIL expand %s B=%lld max=%d: first wrong element %lld\n",
                what, batch, max_tokens, i);
    ++failures;
  }
}

// ---------------------------------------------------------- prepare_pos
template <bool kVec, int kR>
void launch_prepare(const i32* idx, const i32* qsl, const i32* nc,
                    i32* seq_lens, long long* positions, int num_reqs,
                    int seq_lens_len, long long positions_len, Shape s,
                    cudaStream_t stream = 0) {
  const long long mean =
      ceil_div(std::max(positions_len, 1LL), std::max(num_reqs, 1));
  const unsigned lanes =
      s.lanes ? s.lanes : lanes_for(ceil_div(mean, kVec ? 4 : 1));
  const unsigned rpb = std::max(1u, s.threads / lanes);
  const long long slots = std::max(num_reqs, seq_lens_len);
  const long long grid = capped_grid(ceil_div(slots, 1LL * rpb * kR), s);
  if (grid == 0) return;
  jw::kernels::prepare_pos_seq_lens<i32, i32, kVec, kR>
      <<<dim3(grid), dim3(lanes, rpb), 0, stream>>>(
          idx, qsl, nc, seq_lens, positions, num_reqs, seq_lens_len);
}

template <bool kVec>
void test_prepare(std::mt19937& rng, int num_reqs, int extra_slots, int max_q,
                  Shape s, const char* what) {
  std::vector<i32> qsl(num_reqs + 1), idx(std::max(num_reqs, 1)),
      nc(num_reqs + 3);
  qsl[0] = static_cast<i32>(rng() % 3);  // a query may start anywhere
  for (int b = 0; b < num_reqs; ++b)
    qsl[b + 1] = qsl[b] + static_cast<i32>(rng() % (max_q + 1));
  for (auto& v : nc) v = static_cast<i32>(rng() % 5000);
  for (int b = 0; b < num_reqs; ++b)
    idx[b] = static_cast<i32>(rng() % nc.size());
  const int seq_lens_len = num_reqs + extra_slots;
  const size_t offset = kVec ? 0 : 1;
  const long long tokens = qsl[num_reqs];
  Buffer<long long> pos(tokens + offset + 4);
  Buffer<i32> sl(seq_lens_len + 4);
  pos.poison();
  sl.poison();
  std::vector<long long> want_pos = pos.download(pos.n);
  std::vector<i32> want_sl = sl.download(sl.n);
  Buffer<i32> dq(qsl), di(idx), dn(nc);
  launch_prepare<kVec, 8>(di.ptr, dq.ptr, dn.ptr, sl.ptr, pos.ptr + offset,
                          num_reqs, seq_lens_len, tokens, s);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int b = 0; b < seq_lens_len; ++b) {
    if (b >= num_reqs) {
      want_sl[b] = 0;
      continue;
    }
    const i32 c = nc[idx[b]];
    want_sl[b] = c + (qsl[b + 1] - qsl[b]);
    for (i32 k = 0; k < qsl[b + 1] - qsl[b]; ++k)
      want_pos[offset + qsl[b] + k] = c + k;
  }
  if (pos.download(pos.n) != want_pos || sl.download(sl.n) != want_sl) {
    std::printf("FAIL prepare_pos_seq_lens %s R=%d slots=%d max_q=%d\n", what,
                num_reqs, seq_lens_len, max_q);
    ++failures;
  }
}

// ------------------------------------------------- compute_slot_mapping
template <typename TBS, int kBsClass, long long kB, long long kC,
          long long kRank, long long kI, bool kVec, int kR,
          int kStrideClass = 0>
void launch_slots(const i32* qsl, const long long* positions, const i32* table,
                  i32 stride, long long* slots, i32 num_reqs,
                  i32 max_num_tokens, TBS block_size, Shape s,
                  cudaStream_t stream = 0) {
  const unsigned lanes =
      s.lanes
          ? s.lanes
          : lanes_for(ceil_div(ceil_div(max_num_tokens, std::max(num_reqs, 1)),
                               kVec ? 2 : 1));
  const unsigned rpb = std::max(1u, s.threads / lanes);
  const long long request_blocks = ceil_div(num_reqs, 1LL * rpb * kR);
  const long long tail = std::clamp<long long>(
      ceil_div(max_num_tokens, 1LL * lanes * rpb * kR), 1, 2LL * sm_count);
  const long long grid = capped_grid(std::max(request_blocks, tail), s);
  jw::kernels::compute_slot_mapping<i32, kStrideClass, i32, i32, TBS, kBsClass,
                                    kB, kC, kRank, kI, kVec, kR>
      <<<dim3(grid), dim3(lanes, rpb), 0, stream>>>(qsl, positions, table,
                                                    stride, slots, num_reqs,
                                                    max_num_tokens, block_size);
}

long long slot_reference(long long pos, const std::vector<i32>& table,
                         long long row, long long stride, long long bs,
                         long long B, long long C, long long r, long long I) {
  const long long V = bs * B * C;
  const long long vb = pos / V, vo = pos % V;
  const bool local = (vo / I) % C == r;
  const long long lo = (vo / (C * I)) * I + vo % I;
  if (!local) return -1;
  const long long entry = vb * B + lo / bs;
  return static_cast<long long>(table[row * stride + entry]) * bs + lo % bs;
}

template <typename TBS, int kBsClass, long long kB, long long kC,
          long long kRank, long long kI, bool kVec>
void test_slots(std::mt19937& rng, int num_reqs, int max_q, long long bs,
                int columns, int padding, long long position_base, Shape s,
                const char* what) {
  std::vector<i32> qsl(num_reqs + 1);
  qsl[0] = static_cast<i32>(rng() % 3);
  for (int b = 0; b < num_reqs; ++b)
    qsl[b + 1] = qsl[b] + static_cast<i32>(rng() % (max_q + 1));
  const long long tokens = qsl[num_reqs];
  const int stride = columns + 3;
  std::vector<i32> table(static_cast<size_t>(std::max(num_reqs, 1)) * stride);
  for (auto& v : table) v = static_cast<i32>(rng() % 100000);
  // Positions whose column is inside the table.
  const long long V = bs * kB * kC;
  const long long max_vb = columns / kB;
  const unsigned long long span = max_vb * V - position_base;
  std::vector<long long> pos(tokens + 1);
  for (auto& p : pos) {
    const unsigned long long r =
        (static_cast<unsigned long long>(rng()) << 32) | rng();
    p = position_base + static_cast<long long>(r % span);
  }
  const int max_num_tokens = static_cast<int>(tokens) + padding;
  const size_t offset = kVec ? 0 : 1;
  Buffer<long long> out(max_num_tokens + offset + 4);
  out.poison();
  std::vector<long long> want = out.download(out.n);
  Buffer<i32> dq(qsl), dt(table);
  Buffer<long long> dp(pos.size() + 2);
  CHECK_CUDA(cudaMemcpy(dp.ptr + offset, pos.data(), pos.size() * 8,
                        cudaMemcpyHostToDevice));
  launch_slots<TBS, kBsClass, kB, kC, kRank, kI, kVec, 4>(
      dq.ptr, dp.ptr + offset, dt.ptr, stride, out.ptr + offset, num_reqs,
      max_num_tokens, static_cast<TBS>(bs), s);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int b = 0; b < num_reqs; ++b)
    for (i32 t = qsl[b]; t < qsl[b + 1]; ++t)
      want[offset + t] =
          slot_reference(pos[t], table, b, stride, bs, kB, kC, kRank, kI);
  for (long long t = tokens; t < max_num_tokens; ++t) want[offset + t] = -1;
  std::vector<long long> got = out.download(out.n);
  if (got != want) {
    size_t i = 0;
    while (got[i] == want[i]) ++i;
    std::printf(
        "FAIL compute_slot_mapping %s R=%d bs=%lld: token %zu got %lld want "
        "%lld\n",
        what, num_reqs, bs, i - offset, got[i], want[i]);
    ++failures;
  }
}

// ---------------------------------------------------------------- timing
struct Timing {
  std::string name;
  double bytes;
  std::function<void(cudaStream_t)> launch;
  std::vector<double> us;
};

double time_us(const std::function<void(cudaStream_t)>& fn, int iterations,
               cudaStream_t stream) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  fn(stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iterations; ++i) fn(stream);
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaGetLastError());
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1000.0 * ms / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 30, rounds = 5;
  bool only_tests = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--tests"))
      only_tests = true;
  }
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  sm_count = prop.multiProcessorCount;
  max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  std::printf("device %s, %d SMs, L2 %d MB\n", prop.name, sm_count,
              prop.l2CacheSize >> 20);

  // ------------------------------------------------------------ checks
  std::mt19937 rng(7);
  const Shape plain;
  Shape one_block;
  one_block.grid_override = 1;
  Shape three;
  three.grid_override = 3;
  for (const Shape& s : {plain, one_block, three}) {
    const char* w = s.grid_override == 1   ? "grid=1"
                    : s.grid_override == 3 ? "grid=3"
                                           : "grid=full";
    for (long long B : {0LL, 1LL, 37LL, 1000LL, 20000LL}) {
      test_expand<i32, i32, 8, true>(rng, B, 8, s, w);
      test_expand<i32, i32, 8, false>(rng, B, 8, s, w);
      test_expand<i64, i64, 16, true>(rng, B, 16, s, w);
      test_expand<i64, i64, 16, false>(rng, B, 16, s, w);
      test_expand<float, float, 3, true>(rng, B, 3, s, w);
      test_expand<float, float, 3, false>(rng, B, 3, s, w);
      test_expand<i32, i32, 1, true>(rng, B, 1, s, w);
      test_expand<i32, i32, 300, true>(rng, B, 300, s, w);
      test_expand<i32, i32, 300, false>(rng, B, 300, s, w);
    }
    for (int R : {0, 1, 37, 1000, 20000}) {
      test_prepare<true>(rng, R, R % 5, 8, s, w);
      test_prepare<false>(rng, R, R % 5, 8, s, w);
      test_prepare<true>(rng, R, 3, 1, s, w);
      test_prepare<true>(rng, R, 0, 200, s, w);
      test_prepare<false>(rng, R, 0, 200, s, w);
    }
    for (int R : {0, 1, 37, 1000, 20000}) {
      // bs 16 (divisible by 16), 13 (no class), 1 (the class one).
      test_slots<i32, 2, 1, 1, 0, 1, true>(rng, R, 9, 16, 40, 5, 0, s, w);
      test_slots<i32, 2, 1, 1, 0, 1, false>(rng, R, 9, 16, 40, 5, 0, s, w);
      test_slots<i32, 0, 1, 1, 0, 1, true>(rng, R, 9, 13, 40, 0, 0, s, w);
      test_slots<i32, 1, 1, 1, 0, 1, true>(rng, R, 9, 1, 40, 3, 0, s, w);
      test_slots<i32, 2, 1, 1, 0, 1, true>(rng, R, 200, 16, 40, 0, 0, s, w);
      // Context parallel: rank 1 of 2; rank 3 of 4, interleave 2, 2 blocks
      // per KV block.
      test_slots<i32, 2, 1, 2, 1, 1, true>(rng, R, 9, 16, 40, 2, 0, s, w);
      test_slots<i32, 0, 2, 4, 3, 2, true>(rng, R, 9, 8, 40, 2, 0, s, w);
      test_slots<i32, 0, 2, 4, 3, 2, false>(rng, R, 9, 8, 40, 2, 0, s, w);
      // Positions past 2^31 (block size 2^28): the 64-bit path.
      test_slots<i32, 2, 1, 1, 0, 1, true>(rng, R, 9, 1LL << 28, 40, 0,
                                           (1LL << 31) - 64, s, w);
      // A block size past 2^31 (i64): the 64-bit path for every position.
      test_slots<i64, 0, 1, 1, 0, 1, true>(rng, R, 9, (1LL << 32) + 3, 2, 0, 0,
                                           s, w);
    }
  }
  std::printf("checks: %d failures\n", failures);
  if (only_tests) return failures ? 1 : 0;

  // ------------------------------------------------- the bench's shapes
  const long long R = 1 << 20, per = 8, tokens = R * per;
  std::mt19937 brng(1234);
  std::vector<i32> qsl(R + 1), cu(R), idx(R), computed(R);
  for (long long r = 0; r <= R; ++r) qsl[r] = static_cast<i32>(r * per);
  for (long long r = 0; r < R; ++r) {
    cu[r] = static_cast<i32>((r + 1) * per);
    idx[r] = static_cast<i32>(r);
    computed[r] = static_cast<i32>(brng() % 4096);
  }
  Buffer<i32> dq(qsl), dcu(cu), didx(idx), dnc(computed);
  Buffer<i32> dx(std::vector<i32>(R, 3));
  Buffer<i32> dout(tokens);
  Buffer<i32> dsl(R);
  Buffer<long long> dpos_out(tokens);
  const long long blocks_per_req = 64, bs = 16;
  std::vector<long long> pos(tokens);
  for (long long t = 0; t < tokens; ++t) pos[t] = (t % per) + (brng() % 512);
  std::vector<i32> table(R * blocks_per_req);
  for (auto& v : table) v = static_cast<i32>(brng() % 100000);
  Buffer<long long> dpos(pos);
  Buffer<i32> dtable(table);
  Buffer<long long> dslots(tokens);
  // The block-table sectors (32 bytes) the kernel must read, against the 4
  // bytes per token the bench counts.
  long long sectors = 0;
  for (long long r = 0; r < R; ++r) {
    unsigned long long mask = 0;
    for (long long t = r * per; t < (r + 1) * per; ++t)
      mask |= 1ull << ((pos[t] / bs) / 8);
    sectors += __builtin_popcountll(mask);
  }
  const double slot_bytes = 16.0 * tokens + 4.0 * tokens + 4.0 * R;
  const double slot_real = 16.0 * tokens + 32.0 * sectors + 4.0 * R;
  std::printf(
      "compute_slot_mapping: the bench counts %.1f MB; with whole 32-byte "
      "table sectors %.1f MB (%.2f sectors per request)\n",
      slot_bytes / 1e6, slot_real / 1e6, double(sectors) / R);

  const size_t copy_bytes = size_t{1} << 30;
  Buffer<char> ca(copy_bytes), cb(copy_bytes);
  CHECK_CUDA(cudaMemset(ca.ptr, 1, copy_bytes));

  std::vector<Timing> timings;
  const double expand_bytes = 4.0 * tokens + 8.0 * R;
  const double prepare_bytes = 8.0 * tokens + 16.0 * R;
  timings.push_back({"copy 1 GiB", 2.0 * copy_bytes, [&](cudaStream_t s) {
                       CHECK_CUDA(cudaMemcpyAsync(cb.ptr, ca.ptr, copy_bytes,
                                                  cudaMemcpyDeviceToDevice, s));
                     }});
  timings.push_back(
      {"copy 40 MiB (expand's bytes)", expand_bytes, [&](cudaStream_t s) {
         CHECK_CUDA(cudaMemcpyAsync(cb.ptr, ca.ptr, size_t(expand_bytes / 2),
                                    cudaMemcpyDeviceToDevice, s));
       }});
  timings.push_back(
      {"copy 80 MiB (prepare's bytes)", prepare_bytes, [&](cudaStream_t s) {
         CHECK_CUDA(cudaMemcpyAsync(cb.ptr, ca.ptr, size_t(prepare_bytes / 2),
                                    cudaMemcpyDeviceToDevice, s));
       }});
  // Each variant: its name, lanes per request (0: the descriptor's rule),
  // threads per block, requests per group (kR) and grid cap in blocks per
  // SM (-1: the descriptor's, 0: none). The first of each kernel is its
  // descriptor's launch.
#define EXPAND(NAME, KR, LANES, THREADS, BPS, VEC)                       \
  timings.push_back({"expand " NAME, expand_bytes, [&](cudaStream_t s) { \
                       Shape sh;                                         \
                       sh.lanes = LANES;                                 \
                       sh.threads = THREADS;                             \
                       sh.blocks_per_sm = BPS;                           \
                       launch_expand<i32, i32, 8, VEC, KR>(              \
                           dout.ptr, dx.ptr, dcu.ptr, -1, 0, R, sh, s);  \
                     }})
  EXPAND("(descriptor: L2 T256 kR4, 8 blocks/SM)", 4, 0, 256, -1, true);
  EXPAND("grid uncapped", 4, 0, 256, 0, true);
  EXPAND("16 blocks/SM", 4, 0, 256, 16, true);
  EXPAND("kR2", 2, 0, 256, -1, true);
  EXPAND("kR8", 8, 0, 256, -1, true);
  EXPAND("T128", 4, 0, 128, -1, true);
  EXPAND("L4", 4, 4, 256, -1, true);
  EXPAND("4-byte stores (L8)", 4, 0, 256, -1, false);

#define PREPARE(NAME, KR, LANES, THREADS, BPS, VEC)                         \
  timings.push_back({"prepare " NAME, prepare_bytes, [&](cudaStream_t s) {  \
                       Shape sh;                                            \
                       sh.lanes = LANES;                                    \
                       sh.threads = THREADS;                                \
                       sh.blocks_per_sm = BPS;                              \
                       launch_prepare<VEC, KR>(didx.ptr, dq.ptr, dnc.ptr,   \
                                               dsl.ptr, dpos_out.ptr, R, R, \
                                               tokens, sh, s);              \
                     }})
  PREPARE("(descriptor: L2 T256 kR8)", 8, 0, 256, -1, true);
  PREPARE("kR4", 4, 0, 256, -1, true);
  PREPARE("kR6", 6, 0, 256, -1, true);
  PREPARE("L4", 8, 4, 256, -1, true);
  PREPARE("T128", 8, 0, 128, -1, true);
  PREPARE("T512", 8, 0, 512, -1, true);
  PREPARE("8 blocks/SM", 8, 0, 256, 8, true);
  PREPARE("8-byte stores (L8)", 8, 0, 256, -1, false);

#define SLOTS(NAME, KR, LANES, THREADS, BPS, VEC)                        \
  timings.push_back({"slots " NAME, slot_bytes, [&](cudaStream_t s) {    \
                       Shape sh;                                         \
                       sh.lanes = LANES;                                 \
                       sh.threads = THREADS;                             \
                       sh.blocks_per_sm = BPS;                           \
                       launch_slots<i32, 2, 1, 1, 0, 1, VEC, KR, 2>(     \
                           dq.ptr, dpos.ptr, dtable.ptr, blocks_per_req, \
                           dslots.ptr, R, tokens, bs, sh, s);            \
                     }})
  SLOTS("(descriptor: L4 T256 kR4)", 4, 0, 256, -1, true);
  SLOTS("kR1", 1, 0, 256, -1, true);
  SLOTS("kR2", 2, 0, 256, -1, true);
  SLOTS("kR3", 3, 0, 256, -1, true);
  SLOTS("L8", 4, 8, 256, -1, true);
  SLOTS("T128", 4, 0, 128, -1, true);
  SLOTS("T512", 4, 0, 512, -1, true);
  SLOTS("8 blocks/SM", 4, 0, 256, 8, true);
  SLOTS("kR2 8 blocks/SM", 2, 0, 256, 8, true);
  SLOTS("single tokens (L8)", 4, 0, 256, -1, false);

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  for (int round = 0; round < rounds; ++round)
    for (auto& t : timings)
      t.us.push_back(time_us(t.launch, iterations, stream));

  // Each timed kernel's output once more against the reference.
  {
    std::vector<i32> o = dout.download(tokens);
    bool ok = std::all_of(o.begin(), o.end(), [](i32 v) { return v == 3; });
    std::vector<long long> p = dpos_out.download(tokens);
    std::vector<i32> l = dsl.download(R);
    for (long long r = 0; r < R && ok; ++r) {
      ok = l[r] == computed[r] + per;
      for (long long k = 0; k < per && ok; ++k)
        ok = p[r * per + k] == computed[r] + k;
    }
    std::vector<long long> sm = dslots.download(tokens);
    for (long long t = 0; t < tokens && ok; ++t)
      ok = sm[t] == slot_reference(pos[t], table, t / per, blocks_per_req, bs,
                                   1, 1, 0, 1);
    if (!ok) {
      std::printf("FAIL: a timed kernel's output is wrong\n");
      ++failures;
    }
  }

  double copy_gbps = 0;
  std::printf(
      "\n%d iterations per timing, %d rounds (min / median of rounds)\n",
      iterations, rounds);
  std::printf("| %-34s | %8s | %9s | %9s | %7s |\n", "variant", "MB",
              "us (min)", "GB/s", "vs copy");
  for (auto& t : timings) {
    std::vector<double> v = t.us;
    std::sort(v.begin(), v.end());
    const double best = v.front(), median = v[v.size() / 2];
    const double gbps = t.bytes / (median * 1e-6) / 1e9;
    if (copy_gbps == 0) copy_gbps = gbps;
    std::printf("| %-34s | %8.1f | %9.2f | %9.1f | %6.2fx | median %.2f us\n",
                t.name.c_str(), t.bytes / 1e6, best, gbps, gbps / copy_gbps,
                median);
  }
  std::printf("checks: %d failures\n", failures);
  return failures ? 1 : 0;
}
