// Tests of support/usable_cpus: the CPUs a process may use are the
// smallest of the host's, its affinity mask's and its cgroup's CPU quota,
// each source given here as a fake (a cgroup file tree, a mask).
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "temporary_directory.hpp"
#include "usable_cpus.hpp"

namespace jc = jitwarm::detail;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

cpu_set_t mask_of(unsigned cpus) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (unsigned cpu = 0; cpu < cpus; ++cpu) CPU_SET(cpu * 2, &mask);
  return mask;
}

// A process in cgroup /kubepods/pod1/c2 of a fake cgroup v2 tree, on a
// 128-core host, with no affinity mask known.
struct FakeHost {
  jitwarm::detail::TemporaryDirectory dir{"jitwarm-usable-cpus-"};
  jc::CpuSources sources;
  FakeHost() {
    sources.self_cgroup = dir.path() / "self-cgroup";
    sources.cgroup_root = dir.path() / "cgroup";
    sources.host = 128;
    write(sources.self_cgroup, "0::/kubepods/pod1/c2\n");
  }
  void cpu_max(const std::string& cgroup, const std::string& text) {
    write(sources.cgroup_root / cgroup / "cpu.max", text + "\n");
  }
};

}  // namespace

TEST_CASE("with no quota and no mask, every core of the host") {
  FakeHost host;
  host.cpu_max("kubepods/pod1/c2", "max 100000");
  const jc::UsableCpus cpus = jc::usable_cpus(host.sources);
  CHECK(cpus.count == 128);
  CHECK(cpus.quota == 0);
  CHECK(cpus.describe() == "128 (all 128 cores)");
}

TEST_CASE("the process's own cgroup's quota, rounded up") {
  FakeHost host;
  host.cpu_max("kubepods/pod1/c2", "400000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 4);
  CHECK(jc::usable_cpus(host.sources).describe() ==
        "4 (CPU quota 4 of 128 cores)");
  host.cpu_max("kubepods/pod1/c2", "150000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 2);
  host.cpu_max("kubepods/pod1/c2", "50000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 1);
}

TEST_CASE(
    "a quota above the process's cgroup limits it too, the smallest wins") {
  FakeHost host;
  host.cpu_max("kubepods/pod1/c2", "max 100000");
  host.cpu_max("kubepods/pod1", "800000 100000");
  host.cpu_max("kubepods", "1600000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 8);
  host.cpu_max("kubepods/pod1/c2", "1200000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 8);
  // A quota in another cgroup (a sibling) is not this process's.
  host.cpu_max("kubepods/pod1/c3", "100000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 8);
}

TEST_CASE("a container's namespaced cgroup (0::/) reads the root's cpu.max") {
  FakeHost host;
  write(host.sources.self_cgroup, "0::/\n");
  host.cpu_max("", "300000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 3);
}

TEST_CASE("the affinity mask limits, and the smaller of mask and quota wins") {
  FakeHost host;
  host.sources.affinity = mask_of(6);
  jc::UsableCpus cpus = jc::usable_cpus(host.sources);
  CHECK(cpus.count == 6);
  CHECK(cpus.affinity == 6);
  CHECK(cpus.describe() == "6 (affinity mask 6 of 128 cores)");
  host.cpu_max("kubepods/pod1/c2", "400000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 4);
  host.sources.affinity = mask_of(2);
  CHECK(jc::usable_cpus(host.sources).count == 2);
  CHECK(jc::usable_cpus(host.sources).describe() ==
        "2 (affinity mask 2 of 128 cores)");
}

TEST_CASE("sources that cannot be read or make no sense limit nothing") {
  FakeHost host;
  // No cpu.max anywhere (cgroup v1, or the cpu controller not enabled).
  CHECK(jc::usable_cpus(host.sources).count == 128);
  for (const char* bad : {"", "max", "0 100000", "100000 0", "-4 100000",
                          "lots 100000", "400000 100000x"}) {
    CAPTURE(bad);
    host.cpu_max("kubepods/pod1/c2", bad);
    CHECK(jc::usable_cpus(host.sources).count == 128);
  }
  // A cgroup v1 only /proc/self/cgroup: no "0::" line.
  write(host.sources.self_cgroup, "4:cpu,cpuacct:/kubepods/pod1/c2\n");
  host.cpu_max("kubepods/pod1/c2", "400000 100000");
  CHECK(jc::usable_cpus(host.sources).count == 128);
  host.sources.self_cgroup = host.dir.path() / "missing";
  CHECK(jc::usable_cpus(host.sources).count == 128);
}

TEST_CASE("this process's count is at least 1 and at most the host's") {
  const jc::UsableCpus& cpus = jc::usable_cpus();
  CHECK(cpus.count >= 1);
  CHECK(cpus.count <= cpus.host);
  CHECK(cpus.affinity >= 1);  // sched_getaffinity works on Linux
}
