#include "redis_server.hpp"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace jitwarm::test {
namespace {

// A port the kernel just handed out for loopback: free now, and ephemeral
// ports are not reused at once.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) != 0) {
    throw std::runtime_error("cannot find a free loopback port");
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string find_redis_server() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  dirs += ":/usr/bin:/usr/sbin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon - start);
    const std::string candidate = dir + "/redis-server";
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

}  // namespace

bool RedisServer::available() {
  return !find_redis_server().empty();
}

void RedisServer::skip_unless_available() {
  if (available()) return;
  std::printf(
      "skipped: redis-server is not installed (Debian package "
      "redis-server, listed in scripts/debian-packages.txt)\n");
  std::exit(77);
}

RedisServer::RedisServer(std::vector<std::string> extra) {
  char pattern[] = "/tmp/jitwarm-redis-XXXXXX";
  if (::mkdtemp(pattern) == nullptr)
    throw std::runtime_error("cannot make a directory for redis-server");
  directory_ = pattern;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (start(free_port(), extra)) return;
  }
  std::filesystem::remove_all(directory_);
  throw std::runtime_error("redis-server did not start (5 attempts)");
}

bool RedisServer::start(int port, const std::vector<std::string>& extra) {
  const std::string server = find_redis_server();
  if (server.empty()) throw std::runtime_error("redis-server is not installed");
  std::vector<std::string> args = {server,
                                   "--port",
                                   std::to_string(port),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   directory_,
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--logfile",
                                   directory_ + "/redis.log"};
  args.insert(args.end(), extra.begin(), extra.end());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // The server dies with the test, whatever ends it.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
      _exit(127);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  port_ = port;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // it gave up: port taken
      pid_ = -1;
      return false;
    }
    try {
      (void)command({"PING"});  // any answer (NOAUTH too): it is up
      return true;
    } catch (const std::exception&) {
      // Not listening yet.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill();
  return false;
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);  // a paused server cannot act on SIGTERM
    ::kill(pid_, SIGTERM);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(directory_, ec);
}

std::string RedisServer::url(int database) const {
  return "redis://127.0.0.1:" + std::to_string(port_) + "/" +
         std::to_string(database);
}

std::string RedisServer::command(const std::vector<std::string>& words,
                                 int database) const {
  const timeval timeout{5, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeout);
  if (c == nullptr || c->err != 0) {
    const std::string why = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    throw std::runtime_error("cannot reach redis-server: " + why);
  }
  redisSetTimeout(c, timeout);
  if (database != 0) {
    void* selected =
        redisCommand(c, "SELECT %d", database);  // the one command here
    if (selected != nullptr) freeReplyObject(selected);
  }
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const auto& w : words) {
    argv.push_back(w.data());
    lengths.push_back(w.size());
  }
  auto* reply = static_cast<redisReply*>(redisCommandArgv(
      c, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (reply == nullptr) {
    const std::string why = c->errstr;
    redisFree(c);
    throw std::runtime_error("redis-server did not answer: " + why);
  }
  std::string text;
  switch (reply->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS: text.assign(reply->str, reply->len); break;
    case REDIS_REPLY_INTEGER: text = std::to_string(reply->integer); break;
    case REDIS_REPLY_NIL: text = "(nil)"; break;
    case REDIS_REPLY_ERROR:
      text = "(error) " + std::string(reply->str, reply->len);
      break;
    default: text = "(array)"; break;
  }
  freeReplyObject(reply);
  redisFree(c);
  return text;
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::pause() {
  if (pid_ > 0) ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

}  // namespace jitwarm::test
