// Probing plugins in a child process before they are loaded here: a plugin
// that segfaults, aborts, calls exit() or spins in its own code (its static
// constructors, jitwarm_plugin_negotiate, register_all, unregister_all,
// shutdown) takes down, or hangs, whatever process loads it, and no guard
// of plugin_calls.hpp can contain that. A probe loads each candidate in a
// child process first, in a runtime of its own, and unloads it again; the
// parent watches, and a candidate whose probe dies or runs past the bound
// is rejected with what happened and where:
//
//   killed by signal 11 (SIGSEGV) while loading, in jitwarm_plugin_negotiate
//   exited with status 3 while loading, in register_all
//   timed out after 30 s while loading, in jitwarm_plugin_negotiate
//
// A candidate whose probe comes back (loaded or rejected in the child) is
// left to the real load, which decides as it always does.
//
// One child probes the candidates in turn; after one kills it, a new child
// takes the rest, so a directory of N good plugins costs one fork.
// The child is a fork of the host (no exec): it touches no device and
// loads no cache, and leaves with _exit.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace jitwarm::detail {

// Called by the loader before each step of a load or an unload that runs
// the plugin's code ("its static constructors", "jitwarm_plugin_negotiate",
// "register_all", "unregister_all", "shutdown"). Does nothing outside a
// probe's child; in one, it tells the parent where the child is.
void note_plugin_stage(const char* stage) noexcept;

// Whether a load probes its candidates first: always when the environment
// says JITWARM_PLUGIN_ISOLATION=1 (for any host), never inside a probe's
// child, else `requested` (PluginLoadOptions::isolate). Another value of
// the variable than 0 or 1 is Error(JW_ERROR_INVALID_ARGUMENT).
bool plugin_isolation(bool requested);

// For each candidate, in order: std::nullopt when its probe came back, else
// why it must not be loaded here (the texts above). `timeout_seconds`
// bounds each candidate's load and unload in the child.
std::vector<std::optional<std::string>> probe_plugins(
    const std::vector<std::string>& candidates, double timeout_seconds);

}  // namespace jitwarm::detail
