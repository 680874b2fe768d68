// LeakSanitizer's scan at exit with a live thread whose dynamic TLS block
// starts 16 bytes past a page boundary. GCC 12's sanitizer runtime reads
// such a block as a pre-2.19 glibc TLS header, and the scan then faults
// ("Tracer caught signal 11", an abort after everything passed) unless
// ASan runs with intercept_tls_get_addr=0, as scripts/run.sh runs it. The
// tests that load NVRTC and comgr met this now and then; this one meets it
// every time, so a CI without the option fails here, not by chance.
//
// Exit 0: the scan ran. Exit 77 (skipped): the block did not land where the
// bug needs it, so the run proves nothing.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <future>

namespace {

using Touch = uintptr_t (*)();

struct Start {
  Touch touch;
  std::promise<uintptr_t> address;
};

void* touch_and_stay(void* arg) {
  auto* start = static_cast<Start*>(arg);
  start->address.set_value(start->touch());
  for (;;) pause();  // alive when the process exits
}

}  // namespace

int main() {
  void* library = dlopen(DYNAMIC_TLS_LIBRARY, RTLD_NOW);
  if (library == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  Start start{reinterpret_cast<Touch>(dlsym(library, "jitwarm_test_touch_tls")),
              {}};
  if (start.touch == nullptr) {
    std::fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  std::future<uintptr_t> address = start.address.get_future();
  pthread_t thread;
  if (pthread_create(&thread, nullptr, touch_and_stay, &start) != 0) {
    std::fprintf(stderr, "pthread_create failed\n");
    return 1;
  }
  pthread_detach(thread);
  const uintptr_t offset = address.get() % 4096;
  std::printf("the thread's TLS block starts %zu bytes into its page\n",
              static_cast<std::size_t>(offset));
  return offset == 16 ? 0 : 77;
}
