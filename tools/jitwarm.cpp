// jitwarm — the command-line tool: load plugins, inspect kernels, warm
// manifests ahead of time, manage the persistent cache, run conformance.
#include <iostream>
#include <map>

#include "cli.hpp"
#include "conformance/conformance.hpp"

namespace {

using Command = int (*)(const std::vector<std::string>&);

int run_conformance(const std::vector<std::string>& args) {
  return jitwarm::tools::run_conformance_command(args);
}

const std::map<std::string, std::pair<Command, const char*>>& commands() {
  static const std::map<std::string, std::pair<Command, const char*>> table = {
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
       {jitwarm::cli::cmd_cache, "persistent cache: stats, verify, prune"}},
      {"conformance",
       {run_conformance, "test backends against the CPU reference"}},
  };
  return table;
}

void usage(std::ostream& out) {
  out << "usage: jitwarm COMMAND [options]    (jitwarm COMMAND --help for its "
         "options)\n\n"
         "commands:\n";
  for (const auto& [name, entry] : commands()) {
    out << "  " << name << std::string(13 - name.size(), ' ') << entry.second
        << "\n";
  }
  out << "\nexit codes: 0 ok, 1 failures found, 2 usage, 3 bad input, 4 "
         "environment "
         "(no device, I/O), 70 internal error\n";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jitwarm::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" ||
      args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "jitwarm " << JITWARM_VERSION << " (C ABI "
              << JITWARM_ABI_VERSION << ")\n";
    return kExitOk;
  }
  const auto it = commands().find(args[0]);
  if (it == commands().end()) {
    std::cerr << "jitwarm: unknown command '" << args[0] << "'\n";
    usage(std::cerr);
    return kExitUsage;
  }
  args.erase(args.begin());
  try {
    return it->second.first(args);
  } catch (const jitwarm::Error& e) {
    std::cerr << "jitwarm " << it->first << ": " << e.what() << "\n";
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::cerr << "jitwarm " << it->first << ": internal error: " << e.what()
              << "\n";
    return kExitInternal;
  }
}
