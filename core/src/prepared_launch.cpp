#include "prepared_launch.hpp"

#include <cstring>

namespace jitwarm::detail {

PreparedLaunch::PreparedLaunch(const ArgumentSignature& signature,
                               int32_t device_index, uint64_t signature_hash)
    : hash(signature_hash),
      device(device_index),
      num_words(static_cast<uint32_t>(signature.words().size())),
      words(std::make_unique<uint64_t[]>(num_words)) {
  std::memcpy(words.get(), signature.words().data(),
              num_words * sizeof(uint64_t));
}

PreparedLaunch::~PreparedLaunch() {
  if (plugin_prepared != nullptr && impl != nullptr &&
      impl->c.release_prepared != nullptr) {
    impl->c.release_prepared(impl->c.user_data, plugin_prepared);
  }
}

bool PreparedLaunch::matches(std::span<const uint64_t> other,
                             int32_t device_index) const {
  return device == device_index && num_words == other.size() &&
         std::memcmp(words.get(), other.data(), num_words * sizeof(uint64_t)) ==
             0;
}

bool PreparedLaunch::matches(std::span<const uint64_t> other,
                             int32_t device_index,
                             uint64_t signature_hash) const {
  return hash == signature_hash && matches(other, device_index);
}

uint64_t prepared_launch_hash(const ArgumentSignature& signature,
                              int32_t device) {
  // A multiplicative mix keeps devices apart without hashing twice.
  return signature.hash() ^
         (static_cast<uint64_t>(static_cast<uint32_t>(device)) + 1) *
             0x9E3779B97F4A7C15ull;
}

PreparedLaunchTable::~PreparedLaunchTable() {
  for (auto& bucket : buckets_) {
    PreparedLaunch* launch = bucket.load(std::memory_order_acquire);
    while (launch != nullptr) {
      PreparedLaunch* next = launch->next;
      delete launch;
      launch = next;
    }
  }
}

const PreparedLaunch* PreparedLaunchTable::find(
    const ArgumentSignature& signature, int32_t device) const {
  // Acquire: pairs with the release below, so the launch's fields (written
  // before insert() published it) are visible to a thread that did not
  // walk the chain itself.
  const PreparedLaunch* last = last_hit_.load(std::memory_order_acquire);
  if (last != nullptr && last->matches(signature.words(), device)) {
    return last;
  }
  const uint64_t hash = prepared_launch_hash(signature, device);
  for (const PreparedLaunch* launch =
           buckets_[hash % kBuckets].load(std::memory_order_acquire);
       launch != nullptr; launch = launch->next) {
    if (launch->matches(signature.words(), device, hash)) {
      last_hit_.store(launch, std::memory_order_release);
      return launch;
    }
  }
  return nullptr;
}

const PreparedLaunch* PreparedLaunchTable::insert(
    std::unique_ptr<PreparedLaunch> launch) {
  std::atomic<PreparedLaunch*>& bucket = buckets_[launch->hash % kBuckets];
  PreparedLaunch* head = bucket.load(std::memory_order_acquire);
  for (;;) {
    // A racing insert of the same signature may have won: look again.
    for (const PreparedLaunch* l = head; l != nullptr; l = l->next) {
      if (l->matches({launch->words.get(), launch->num_words}, launch->device,
                     launch->hash)) {
        return l;  // `launch` is destroyed (released) on return
      }
    }
    launch->next = head;
    if (bucket.compare_exchange_weak(head, launch.get(),
                                     std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      size_.fetch_add(1, std::memory_order_relaxed);
      return launch.release();
    }
  }
}

const PreparedLaunch* PreparedLaunchTable::recall(
    std::span<const jw_arg_value> args, int32_t device) const {
  std::array<uint64_t, 1> launch{};
  if (!last_arguments_.recall_matching(
          [&](const MemoKey& kept) {
            return ArgumentImage::matches(args, device, kept);
          },
          launch)) {
    return nullptr;
  }
  return reinterpret_cast<const PreparedLaunch*>(
      static_cast<uintptr_t>(launch[0]));
}

void PreparedLaunchTable::remember(const ArgumentImage& image,
                                   const PreparedLaunch* launch) const {
  const std::array<uint64_t, 1> found{reinterpret_cast<uintptr_t>(launch)};
  last_arguments_.remember(image.words(), found);
}

void PreparedLaunchTableDeleter::operator()(PreparedLaunchTable* table) const {
  delete table;
}

}  // namespace jitwarm::detail
