// A library with thread-local storage, for test_lsan_dynamic_tls: loaded
// with dlopen, its TLS is a block glibc allocates per thread on first use.
#include <cstdint>

namespace {
// Small and unaligned, so ASan's allocator hands a new thread the block at
// 16 bytes past a page boundary.
thread_local char block[8];
}  // namespace

extern "C" __attribute__((visibility("default"))) uintptr_t
jitwarm_test_touch_tls() {
  block[0] = 1;
  return reinterpret_cast<uintptr_t>(&block[0]);
}
