// probe_plugins: a child process loads and unloads each candidate, telling
// the parent where it is, one line at a time over a pipe:
//
//   child -> parent  "begin <i>"     candidate i's load starts
//                    "stage <name>"  it is about to run this plugin code
//                    "end <i>"       candidate i is loaded and unloaded
//
// The parent reads until the pipe closes, then reaps the child: a child
// that died between "begin i" and "end i" died in candidate i, at the last
// stage it named.
#include "plugin_probe.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <jitwarm/jitwarm.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

#include "child_process.hpp"
#include "runtime_impl.hpp"

namespace jitwarm::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The pipe's write end, in a probe's child only.
int g_stage_fd = -1;

void write_line(int fd, std::string_view line) noexcept {
  std::string text(line);
  text += '\n';
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t written = ::write(fd, rest.data(), rest.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    rest.remove_prefix(static_cast<std::size_t>(written));
  }
}

// The child: loads and unloads candidates [first, end) in turn, each in a
// runtime of its own with no caches and no log. It is the supervisor's
// child (child_process.hpp), so a plugin that crashes here dies of its
// signal, which the parent names: the host's crash handlers (a test
// framework's, Python's faulthandler, a server's reporter) would otherwise
// report the probe's expected death as the host's own crash. It leaves
// without running the host's exit handlers (they belong to the parent).
void run_probe_child(int fd, const std::vector<std::string>& candidates,
                     std::size_t first) {
  g_stage_fd = fd;
  for (std::size_t i = first; i < candidates.size(); ++i) {
    write_line(fd, fmt::format("begin {}", i));
    try {
      RuntimeOptions options;
      options.no_cache_dir = true;
      options.no_remote_cache = true;
      options.log = [](jw_log_level, const std::string&) {};
      Runtime runtime(std::move(options));
      impl_of(runtime).plugin_host().load_plugin(candidates[i]);
    } catch (...) {
      // A rejection or any other error is the real load's to report.
    }
    write_line(fd, fmt::format("end {}", i));
  }
}

bool is_unload_stage(std::string_view stage) {
  return stage == "unregister_all" || stage == "shutdown";
}

// Why the candidate whose probe ended so must not be loaded: how the child
// ended, as ChildEnd words it, and where (plugin_probe.hpp's examples).
std::string describe_death(const ChildEnd& end, bool timed_out,
                           double timeout_seconds, const std::string& stage) {
  const std::string phase =
      is_unload_stage(stage) ? "while unloading" : "while loading";
  const std::string where =
      stage.empty() ? std::string("the loader") : std::string(stage);
  if (timed_out) {
    return fmt::format("timed out after {:g} s {}, in {}", timeout_seconds,
                       phase, where);
  }
  return fmt::format("{} {}, in {}", end.describe(), phase, where);
}

struct ChildWatch {
  std::optional<std::size_t> current;  // begun, not ended
  std::size_t next = 0;                // the first candidate not yet done
  std::string stage;
  bool progressed = false;
  bool timed_out = false;
};

// Reads the child's lines until the pipe closes, or until the candidate in
// progress runs past the bound (then kills the child).
void watch_child(const ChildProcess& child, double timeout_seconds,
                 ChildWatch& w) {
  const auto bound = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(timeout_seconds));
  auto deadline = Clock::now() + bound;
  std::string buffer;
  for (;;) {
    if (!child.wait_readable(deadline)) {
      w.timed_out = true;
      child.kill();
      return;
    }
    if (!child.read_some(buffer)) return;  // the child is gone (or finished)
    while (const std::optional<std::string> line = take_line(buffer)) {
      if (line->starts_with("begin ")) {
        w.current = std::stoul(line->substr(6));
        w.stage.clear();
        w.progressed = true;
        deadline = Clock::now() + bound;
      } else if (line->starts_with("stage ")) {
        w.stage = line->substr(6);
      } else if (line->starts_with("end ")) {
        w.next = std::stoul(line->substr(4)) + 1;
        w.current.reset();
        deadline = Clock::now() + bound;
      }
    }
  }
}

}  // namespace

bool plugin_isolation(bool requested) {
  if (g_stage_fd >= 0) return false;  // a probe's child loads in-process
  const char* value = std::getenv("JITWARM_PLUGIN_ISOLATION");
  if (value == nullptr || *value == '\0') return requested;
  const std::string_view text(value);
  if (text == "1") return true;
  if (text == "0") return requested;
  throw Error(JW_ERROR_INVALID_ARGUMENT,
              fmt::format("JITWARM_PLUGIN_ISOLATION={}: expected 1 (probe "
                          "every plugin in a child process first) or 0",
                          text));
}

void note_plugin_stage(const char* stage) noexcept {
  if (g_stage_fd >= 0) write_line(g_stage_fd, fmt::format("stage {}", stage));
}

std::vector<std::optional<std::string>> probe_plugins(
    const std::vector<std::string>& candidates, double timeout_seconds) {
  std::vector<std::optional<std::string>> fates(candidates.size());
  std::size_t next = 0;
  while (next < candidates.size()) {
    ChildProcess child;
    try {
      child = ChildProcess::fork(ChildChannel::from_child, [&](int fd) {
        run_probe_child(fd, candidates, next);
      });
    } catch (const std::system_error& e) {
      throw Error(JW_ERROR_IO,
                  fmt::format("cannot probe plugins: {}", e.what()));
    }
    ChildWatch watch;
    watch.next = next;
    watch_child(child, timeout_seconds, watch);
    child.close_channel();
    const ChildEnd end = child.reap();
    if (watch.current) {
      fates[*watch.current] =
          describe_death(end, watch.timed_out, timeout_seconds, watch.stage);
      next = *watch.current + 1;
    } else if (!watch.progressed && watch.next < candidates.size()) {
      // The child died before it began: say so for the candidate it was
      // given rather than start it again and again.
      fates[watch.next] =
          describe_death(end, watch.timed_out, timeout_seconds, "");
      next = watch.next + 1;
    } else {
      next = watch.next;
    }
  }
  return fates;
}

}  // namespace jitwarm::detail
