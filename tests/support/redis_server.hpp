// A redis-server of a test's own, for the remote cache tier's tests: started
// on a free loopback port with no persistence, in a temporary directory;
// stopped (and its directory removed) when the object goes, also when a
// check fails and unwinds; and killed with the test process should that
// die first (PR_SET_PDEATHSIG), so no server outlives its test.
#pragma once

#include <string>
#include <vector>

namespace jitwarm::test {

class RedisServer {
 public:
  // `extra`: more redis-server arguments ("--maxmemory", "1mb").
  explicit RedisServer(std::vector<std::string> extra = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url(int database = 0) const;
  // One command (in `database`); the reply as text: a string or status as
  // is, an integer in decimal, "(nil)", "(error) <message>".
  std::string command(const std::vector<std::string>& words,
                      int database = 0) const;

  void kill();    // SIGKILL: gone at once, mid-conversation
  void pause();   // SIGSTOP: connections open, nothing answered
  void resume();  // SIGCONT

  // Whether redis-server can be run here.
  static bool available();
  // For a test's main: prints why and exits 77 (meson's "skipped") when
  // redis-server is not installed.
  static void skip_unless_available();

 private:
  bool start(int port, const std::vector<std::string>& extra);

  int pid_ = -1;
  int port_ = 0;
  std::string directory_;
};

}  // namespace jitwarm::test
