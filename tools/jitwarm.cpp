// jitwarm — the command-line tool: load plugins, inspect kernels, warm
// manifests ahead of time, manage the persistent cache, run conformance.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <map>

#include "cli.hpp"
#include "conformance/conformance.hpp"
#include "names.hpp"

namespace {

using Command = int (*)(const std::vector<std::string>&);

int run_conformance(const std::vector<std::string>& args) {
  return jitwarm::tools::run_conformance_command(args);
}

const std::map<std::string, std::pair<Command, std::string>>& commands() {
  static const std::map<std::string, std::pair<Command, std::string>> table = {
      {"plugins",
       {jitwarm::cli::cmd_plugins,
        "the plugin load report: loaded and rejected, and why"}},
      {"kernels",
       {jitwarm::cli::cmd_kernels, "kernel schemas and who implements them"}},
      {"explain",
       {jitwarm::cli::cmd_explain,
        "which implementation wins per platform, and why"}},
      {"warmup",
       {jitwarm::cli::cmd_warmup,
        "compile a manifest's keys, compile-only, into the cache"}},
      {"cache",
       {jitwarm::cli::cmd_cache,
        fmt::format("persistent cache: {}",
                    fmt::join(jitwarm::cli::cache_actions(), ", "))}},
      {"conformance",
       {run_conformance, "test backends against the CPU reference"}},
      {"tune",
       {jitwarm::cli::cmd_tune,
        "benchmark tunable kernels' configs on the device, keep the "
        "fastest"}},
  };
  return table;
}

void usage(std::ostream& out) {
  out << "usage: jitwarm COMMAND [options]    (jitwarm help COMMAND, or "
         "jitwarm COMMAND --help, for its options)\n\n"
         "commands:\n";
  for (const auto& [name, entry] : commands()) {
    out << "  " << name << std::string(13 - name.size(), ' ') << entry.second
        << "\n";
  }
  out << "\nexit codes: 0 ok, 1 failures found, 2 usage, 3 bad input, 4 "
         "environment (no device, unsupported target, I/O), 70 internal "
         "error\n";
}

// "jitwarm: 'warmp' is not a jitwarm command; did you mean 'warmup'?"
int unknown_command(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [command, entry] : commands()) names.push_back(command);
  std::cerr << "jitwarm: '" << name << "' is not a jitwarm command"
            << jitwarm::cli::did_you_mean(
                   jitwarm::cli::closest_spellings(name, names))
            << "\n"
            << "try 'jitwarm --help'\n";
  return jitwarm::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jitwarm::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    usage(std::cerr);
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" ||
      (args[0] == "help" && args.size() == 1)) {
    usage(std::cout);
    return kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << version_text() << "\n";
    return kExitOk;
  }
  if (args[0] == "help") {
    // "jitwarm help warmup" is "jitwarm warmup --help", as in git.
    if (args.size() > 2) {
      std::cerr << "jitwarm help: give one command (jitwarm help COMMAND)\n";
      return kExitUsage;
    }
    args = {args[1], "--help"};
  }
  const auto it = commands().find(args[0]);
  if (it == commands().end()) return unknown_command(args[0]);
  args.erase(args.begin());
  try {
    return it->second.first(args);
  } catch (const CommandError& e) {
    return report_error(it->first, e);
  } catch (const jitwarm::Error& e) {
    std::cerr << "jitwarm " << it->first << ": " << e.what() << "\n";
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::cerr << "jitwarm " << it->first << ": internal error: " << e.what()
              << "\n";
    return kExitInternal;
  }
}
