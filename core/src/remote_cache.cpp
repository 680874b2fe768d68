#include "remote_cache.hpp"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cache_entry.hpp"

namespace jitwarm::detail {
namespace {

timeval to_timeval(std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  return tv;
}

struct ReplyHolder {
  redisReply* reply;
  explicit ReplyHolder(redisReply* r) : reply(r) {}
  ~ReplyHolder() {
    if (reply != nullptr) freeReplyObject(reply);
  }
  ReplyHolder(const ReplyHolder&) = delete;
  ReplyHolder& operator=(const ReplyHolder&) = delete;
};

// hiredis writes with write(2): to a server that closed the connection
// that raises SIGPIPE, whose default action ends the host. Blocked on this
// thread while a command runs, and consumed if it was raised meanwhile
// (unless one was pending before, which is not ours to take).
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlocked() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec now{0, 0};
        sigtimedwait(&pipe_, nullptr, &now);
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_, previous_;
  bool was_pending_ = false;
};

}  // namespace

struct RedisCache::Connection {
  redisContext* context = nullptr;
  pid_t owner = 0;
  ~Connection() {
    if (context != nullptr) redisFree(context);
  }

  int saved_errno = 0;  // errno right after the last command

  // Runs a command; nullptr when it got no reply (failure() says why).
  redisReply* command(int argc, const char** argv, const size_t* lengths) {
    SigpipeBlocked blocked;
    void* reply = redisCommandArgv(context, argc, argv, lengths);
    saved_errno = errno;
    return static_cast<redisReply*>(reply);
  }

  // Why the last command got no reply, in words.
  std::string failure(std::chrono::milliseconds timeout) const {
    if (context->err == REDIS_ERR_IO &&
        (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)) {
      return fmt::format("no answer within {} ms", timeout.count());
    }
    if (context->err == REDIS_ERR_EOF)
      return "the server closed the connection";
    return context->errstr[0] != '\0' ? std::string(context->errstr)
                                      : std::string("connection error");
  }
};

RedisCache::RedisCache(RedisEndpoint endpoint,
                       std::chrono::milliseconds timeout, const Logger* logger)
    : endpoint_(std::move(endpoint)), timeout_(timeout), logger_(logger) {}

RedisCache::~RedisCache() = default;

std::string RedisCache::value_name(const EntryRef& entry) {
  return fmt::format("jitwarm:v{}:{}", kEntryNameVersion, entry.name());
}

bool RedisCache::down_now() {
  std::lock_guard lock(mutex_);
  return std::chrono::steady_clock::now() < down_until_;
}

void RedisCache::note_down(const std::string& why) {
  bool warn = false;
  {
    std::lock_guard lock(mutex_);
    down_until_ = std::chrono::steady_clock::now() + kRetryAfter;
    idle_.clear();  // the server is gone for them too
    warn = !std::exchange(down_warned_, true);
  }
  if (warn && logger_ != nullptr) {
    logger_->log(JW_LOG_WARNING,
                 fmt::format("remote cache {} is unavailable ({}); going on "
                             "with the local cache and compiler, and trying "
                             "it again in {} s",
                             endpoint_.display(), why, kRetryAfter.count()));
  }
}

void RedisCache::note_up() {
  bool recovered = false;
  {
    std::lock_guard lock(mutex_);
    recovered = std::exchange(down_warned_, false);
  }
  if (recovered && logger_ != nullptr) {
    logger_->log(JW_LOG_INFO, fmt::format("remote cache {} answers again",
                                          endpoint_.display()));
  }
}

void RedisCache::note_writes_refused(const std::string& why) {
  bool warn = false;
  {
    std::lock_guard lock(mutex_);
    writes_refused_until_ = std::chrono::steady_clock::now() + kRetryAfter;
    warn = !std::exchange(writes_refused_warned_, true);
  }
  if (warn && logger_ != nullptr) {
    logger_->log(
        JW_LOG_WARNING,
        fmt::format("remote cache {} refuses writes ({}); entries compiled "
                    "here are not shared, reads go on; writing is tried "
                    "again in {} s",
                    endpoint_.display(), why, kRetryAfter.count()));
  }
}

std::unique_ptr<RedisCache::Connection> RedisCache::take() {
  const pid_t self = ::getpid();
  {
    std::lock_guard lock(mutex_);
    while (!idle_.empty()) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      // Inherited across fork: its socket is the parent's stream. Closing
      // this process's copy leaves the parent's connection alone.
      if (c->owner == self) return c;
    }
  }
  auto c = std::make_unique<Connection>();
  c->owner = self;
  const timeval tv = to_timeval(timeout_);
  {
    SigpipeBlocked blocked;
    c->context =
        redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, tv);
    if (c->context == nullptr) {
      note_down("out of memory");
      return nullptr;
    }
    if (c->context->err != 0) {
      note_down(c->context->errstr);
      return nullptr;
    }
    if (redisSetTimeout(c->context, tv) != REDIS_OK) {
      note_down(c->failure(timeout_));
      return nullptr;
    }
    const auto run = [&](std::vector<std::string> words) -> bool {
      std::vector<const char*> argv;
      std::vector<size_t> lengths;
      for (const auto& w : words) {
        argv.push_back(w.data());
        lengths.push_back(w.size());
      }
      ReplyHolder reply(c->command(static_cast<int>(argv.size()), argv.data(),
                                   lengths.data()));
      if (reply.reply == nullptr) {
        note_down(c->failure(timeout_));
        return false;
      }
      if (reply.reply->type == REDIS_REPLY_ERROR) {
        note_down(fmt::format("{} refused: {}", words[0],
                              std::string(reply.reply->str, reply.reply->len)));
        return false;
      }
      return true;
    };
    if (!endpoint_.password.empty()) {
      std::vector<std::string> auth{"AUTH"};
      if (!endpoint_.user.empty()) auth.push_back(endpoint_.user);
      auth.push_back(endpoint_.password);
      if (!run(std::move(auth))) return nullptr;
    }
    if (endpoint_.database != 0 &&
        !run({"SELECT", std::to_string(endpoint_.database)})) {
      return nullptr;
    }
  }
  return c;
}

void RedisCache::give_back(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(connection));
}

TierLoad RedisCache::load(const EntryRef& entry) {
  if (down_now()) return TierLoad::not_answered();
  std::unique_ptr<Connection> c = take();
  if (!c) return TierLoad::not_answered();
  const std::string name = value_name(entry);
  // GETRANGE's end is inclusive: one byte more than an entry may have
  // tells an oversized value apart, without reading it whole.
  const std::string last = std::to_string(kMaxEntryBytes);
  const char* argv[] = {"GETRANGE", name.c_str(), "0", last.c_str()};
  const size_t lengths[] = {8, name.size(), 1, last.size()};
  const ReplyHolder reply(c->command(4, argv, lengths));
  if (reply.reply == nullptr) {
    note_down(c->failure(timeout_));
    return TierLoad::not_answered();
  }
  give_back(std::move(c));
  note_up();
  const redisReply& r = *reply.reply;
  std::string why;
  std::optional<Artifact> artifact;
  RejectReason reason = RejectReason::corrupt;
  if (r.type == REDIS_REPLY_STRING && r.len == 0) {
    return {};  // a miss: GETRANGE of no value is ""
  } else if (r.type == REDIS_REPLY_ERROR) {
    why = fmt::format("the server answered '{}'", std::string(r.str, r.len));
  } else if (r.type != REDIS_REPLY_STRING) {
    why = "the server's answer is not a string";
  } else if (r.len > kMaxEntryBytes) {
    why = fmt::format("it is larger than the {} bytes an entry may have",
                      kMaxEntryBytes);
  } else {
    artifact = entry_artifact(std::string_view(r.str, r.len), entry.key(),
                              entry.fingerprint(), &why, trust_.get(), &reason);
  }
  if (!artifact) {
    if (logger_ != nullptr &&
        warns_about_rejected(trust_.get(), reason, name)) {
      logger_->log(JW_LOG_WARNING,
                   fmt::format("remote cache value {} ignored: {}; compiling "
                               "{}",
                               name, why, entry.key().text()));
    }
    return TierLoad::refused(CacheTier::redis, reason);
  }
  return TierLoad::found(std::move(*artifact), CacheTier::redis);
}

bool RedisCache::store(const EntryRef& entry, const Artifact& artifact) {
  if (down_now()) return false;
  {
    std::lock_guard lock(mutex_);
    if (std::chrono::steady_clock::now() < writes_refused_until_) return false;
  }
  const SigningKey* signer = trust_ ? trust_->signer() : nullptr;
  if (entry_size(entry.key(), entry.fingerprint(), artifact,
                 signer != nullptr) > kMaxEntryBytes)
    return false;
  std::unique_ptr<Connection> c = take();
  if (!c) return false;
  const std::string name = value_name(entry);
  const std::string value =
      serialize_entry(entry.key(), entry.fingerprint(), artifact, signer);
  const char* argv[] = {"SET", name.c_str(), value.data()};
  const size_t lengths[] = {3, name.size(), value.size()};
  const ReplyHolder reply(c->command(3, argv, lengths));
  if (reply.reply == nullptr) {
    note_down(c->failure(timeout_));
    return false;
  }
  give_back(std::move(c));
  note_up();
  if (reply.reply->type == REDIS_REPLY_ERROR) {
    note_writes_refused(std::string(reply.reply->str, reply.reply->len));
    return false;
  }
  {
    std::lock_guard lock(mutex_);
    writes_refused_warned_ = false;
  }
  return true;
}

}  // namespace jitwarm::detail
