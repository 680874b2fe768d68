#include "counted_mutex.hpp"

namespace jitwarm::detail {
namespace {
thread_local uint64_t t_mutex_acquisitions = 0;
}  // namespace

void CountedMutex::count_acquisition() {
  ++t_mutex_acquisitions;
}

uint64_t CountedMutex::acquisitions_on_this_thread() {
  return t_mutex_acquisitions;
}

}  // namespace jitwarm::detail
