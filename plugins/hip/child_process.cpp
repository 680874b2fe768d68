// run_child_process: posix_spawn with a close-on-exec pipe, read to EOF,
// then waitpid.
#include "child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace jitwarm::hip {
namespace {

// Closes the descriptors it holds when it leaves scope.
class FileDescriptors {
 public:
  int fds[2] = {-1, -1};
  ~FileDescriptors() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void close_one(int i) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
};

class SpawnFileActions {
 public:
  SpawnFileActions() { posix_spawn_file_actions_init(&actions_); }
  ~SpawnFileActions() { posix_spawn_file_actions_destroy(&actions_); }
  SpawnFileActions(const SpawnFileActions&) = delete;
  SpawnFileActions& operator=(const SpawnFileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

std::string errno_text(const char* call, int error) {
  return std::string(call) + ": " + std::strerror(error);
}

}  // namespace

std::string ChildProcessResult::outcome() const {
  if (!started) return error;
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  return "exit status " + std::to_string(exit_status);
}

ChildProcessResult run_child_process(const std::vector<std::string>& argv,
                                     const std::string& working_directory) {
  ChildProcessResult result;
  if (argv.empty()) {
    result.error = "no program to run";
    return result;
  }
  FileDescriptors pipe_ends;
  if (pipe2(pipe_ends.fds, O_CLOEXEC) != 0) {
    result.error = errno_text("pipe2", errno);
    return result;
  }
  SpawnFileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  // dup2 clears close-on-exec on the child's 1 and 2 only.
  posix_spawn_file_actions_adddup2(actions.get(), pipe_ends.fds[1], 1);
  posix_spawn_file_actions_adddup2(actions.get(), pipe_ends.fds[1], 2);
  if (!working_directory.empty()) {
    posix_spawn_file_actions_addchdir_np(actions.get(),
                                         working_directory.c_str());
  }
  std::vector<char*> arguments;
  for (const std::string& argument : argv) {
    arguments.push_back(const_cast<char*>(argument.c_str()));
  }
  arguments.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0].c_str(), actions.get(),
                                   nullptr, arguments.data(), environ);
  if (spawned != 0) {
    result.error = "cannot run " + argv[0] + ": " + std::strerror(spawned);
    return result;
  }
  result.started = true;
  pipe_ends.close_one(1);  // EOF once the child (and only it) is done

  char buffer[4096];
  for (;;) {
    const ssize_t n = read(pipe_ends.fds[0], buffer, sizeof(buffer));
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  int status = 0;
  pid_t waited = 0;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited < 0) {
    result.started = false;
    result.error = errno_text("waitpid", errno);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  }
  return result;
}

}  // namespace jitwarm::hip
