#include "in_flight_files.hpp"

#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace jitwarm::detail {
namespace {

// A fixed table: a signal handler may not allocate or lock.
struct Slot {
  enum : int { kFree = 0, kFilling = 1, kReady = 2 };
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
constexpr int kSlots = 64;
Slot g_slots[kSlots];

}  // namespace

InFlightFile::InFlightFile(const std::filesystem::path& path) noexcept
    : slot_(-1) {
  const std::string& text = path.native();
  if (text.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = Slot::kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, Slot::kFilling,
                                                 std::memory_order_acquire)) {
      std::memcpy(g_slots[i].path, text.c_str(), text.size() + 1);
      g_slots[i].state.store(Slot::kReady, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
}

InFlightFile::~InFlightFile() {
  if (slot_ >= 0)
    g_slots[slot_].state.store(Slot::kFree, std::memory_order_release);
}

void remove_in_flight_files() noexcept {
  for (Slot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) == Slot::kReady)
      ::unlink(slot.path);
  }
}

}  // namespace jitwarm::detail
