// How many CPUs this process may keep busy: the default number of warmup
// jobs and of NVRTC compile threads. In a container that is neither the
// host's core count (std::thread::hardware_concurrency(), which a pod
// limited to 4 CPUs on a 128-core node sees as 128) nor what /proc/cpuinfo
// lists, but the smallest of
//
//   - the CPU quota of the process's cgroup and of every cgroup above it
//     (cgroup v2 `cpu.max`: "QUOTA PERIOD", QUOTA/PERIOD CPUs rounded up,
//     or "max PERIOD" for none), the process's own cgroup read from
//     /proc/self/cgroup ("0::/path");
//   - the CPUs of its affinity mask (sched_getaffinity: taskset, cpusets);
//   - the host's CPUs.
//
// Sources that cannot be read (no cgroup v2, a mask that cannot be had)
// limit nothing. The sources are parameters, so tests give a fake cgroup
// tree and mask.
#pragma once

#include <sched.h>

#include <filesystem>
#include <optional>
#include <string>

namespace jitwarm::detail {

struct UsableCpus {
  unsigned count = 1;     // what to use: at least 1
  unsigned host = 1;      // the host's CPUs
  unsigned affinity = 0;  // CPUs in the affinity mask; 0: unknown
  unsigned quota = 0;     // the CPU quota, rounded up; 0: none
  // What limited count, for a summary: "4 (CPU quota 4 of 128 cores)",
  // "2 (affinity mask 2 of 16 cores)", "16 (all 16 cores)".
  std::string describe() const;
};

struct CpuSources {
  std::filesystem::path self_cgroup = "/proc/self/cgroup";
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";
  // The affinity mask; unset: none known (limits nothing).
  std::optional<cpu_set_t> affinity;
  unsigned host = 1;
};

// This process's sources: the files above, sched_getaffinity and
// std::thread::hardware_concurrency().
CpuSources this_process_cpu_sources();

UsableCpus usable_cpus(const CpuSources& sources);
// usable_cpus(this_process_cpu_sources()), read once per process.
const UsableCpus& usable_cpus();

}  // namespace jitwarm::detail
