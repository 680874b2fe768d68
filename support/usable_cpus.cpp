#include "usable_cpus.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

namespace jitwarm::detail {

namespace {

namespace fs = std::filesystem;

// The first line of a small kernel file, or nothing if it cannot be read.
std::optional<std::string> first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// The process's cgroup v2 path ("/kubepods/pod1/c2"): the "0::" line of
// /proc/self/cgroup (a v1 hierarchy's lines name controllers instead).
std::optional<std::string> own_cgroup(const fs::path& self_cgroup) {
  std::ifstream in(self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return std::nullopt;
}

// The CPUs one cpu.max allows, rounded up ("150000 100000": 2), or 0 for
// none ("max 100000", a missing or malformed file).
unsigned quota_of(const fs::path& cpu_max) {
  const std::optional<std::string> line = first_line(cpu_max);
  if (!line) return 0;
  std::istringstream fields(*line);
  std::string quota_text, period_text;
  if (!(fields >> quota_text >> period_text)) return 0;
  unsigned long long quota = 0, period = 0;
  const auto parse = [](const std::string& text, unsigned long long& value) {
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    return error == std::errc() && stop == end;
  };
  if (!parse(quota_text, quota) || !parse(period_text, period) || quota == 0 ||
      period == 0) {
    return 0;
  }
  const unsigned long long cpus = (quota + period - 1) / period;
  return static_cast<unsigned>(std::min<unsigned long long>(cpus, 1u << 20));
}

// The smallest quota of the process's cgroup and the ones above it (each
// limits everything below it), 0 for none.
unsigned cgroup_quota(const CpuSources& sources) {
  const std::optional<std::string> cgroup = own_cgroup(sources.self_cgroup);
  if (!cgroup) return 0;
  unsigned smallest = 0;
  fs::path relative = fs::path(*cgroup).relative_path();
  for (;;) {
    const unsigned quota = quota_of(sources.cgroup_root / relative / "cpu.max");
    if (quota != 0 && (smallest == 0 || quota < smallest)) smallest = quota;
    if (relative.empty()) break;
    relative = relative.parent_path();
  }
  return smallest;
}

}  // namespace

std::string UsableCpus::describe() const {
  const std::string of_host = " of " + std::to_string(host) + " cores)";
  std::string text = std::to_string(count);
  if (quota != 0 && count == quota && quota < host) {
    return text + " (CPU quota " + std::to_string(quota) + of_host;
  }
  if (affinity != 0 && count == affinity && affinity < host) {
    return text + " (affinity mask " + std::to_string(affinity) + of_host;
  }
  return text + " (all " + std::to_string(host) + " cores)";
}

CpuSources this_process_cpu_sources() {
  CpuSources sources;
  sources.host = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof mask, &mask) == 0) sources.affinity = mask;
  return sources;
}

UsableCpus usable_cpus(const CpuSources& sources) {
  UsableCpus cpus;
  cpus.host = std::max(1u, sources.host);
  if (sources.affinity) {
    cpus.affinity = static_cast<unsigned>(CPU_COUNT(&*sources.affinity));
  }
  cpus.quota = cgroup_quota(sources);
  cpus.count = cpus.host;
  for (const unsigned limit : {cpus.affinity, cpus.quota}) {
    if (limit != 0) cpus.count = std::min(cpus.count, limit);
  }
  return cpus;
}

const UsableCpus& usable_cpus() {
  static const UsableCpus cpus = usable_cpus(this_process_cpu_sources());
  return cpus;
}

}  // namespace jitwarm::detail
