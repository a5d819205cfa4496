#include "core/redis/redis_connection.h"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "common/log.h"
#include "core/redis/resp.h"
#include "core/redis/timeouts.h"

namespace dnaserve::core {
namespace {

RedisReply Convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Convert(r->element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

struct ArgvView {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  explicit ArgvView(const std::vector<std::string>& args) {
    argv.reserve(args.size());
    lens.reserve(args.size());
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(argv.size()); }
};

// An idle Redis connection never has anything to read (no pub/sub here), so a readable socket
// means the server closed it (e.g. Redis restarted) or the stream is out of step. Checking before
// each use lets the command go to a fresh connection instead of failing on the dead one.
// That check is a system call per command, and it is only worth making on a connection that
// has been idle: one that answered within this long was alive then, and for the server to have
// closed it since and be serving again (so that a fresh connection would succeed where this one
// fails) it would have to restart within this time, far less than any Redis takes to stop and
// start. A server that closed it and is still down fails the command either way; a READONLY
// reply (a demoted primary) and a Sentinel switch are handled without the check.
constexpr std::chrono::milliseconds kLivenessCheckAfterIdle(5);

bool IdleConnectionBroken(int fd) {
  pollfd p{};
  p.fd = fd;
  p.events = POLLIN;
  return poll(&p, 1, 0) != 0;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

StatusOr<std::string> PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) {
      return BadRequest("redis URL: truncated %-escape in credentials");
    }
    int hi = HexValue(s[i + 1]);
    int lo = HexValue(s[i + 2]);
    if (hi < 0 || lo < 0) return BadRequest("redis URL: bad %-escape in credentials");
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

bool ParseInt(std::string_view s, int min, int max, int* out) {
  if (s.empty() || s.size() > 9) return false;
  int value = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value < min || value > max) return false;
  *out = value;
  return true;
}

}  // namespace

StatusOr<RedisUrl> RedisUrl::Parse(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return BadRequest(
        "redis URL must start with redis:// (TLS and unix sockets are not supported)");
  }
  std::string_view rest = url.substr(kScheme.size());
  RedisUrl parsed;

  // Credentials end at the last '@' (a password may itself contain '@' only %-encoded, but be
  // lenient).
  size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = userinfo.find(':');
    std::string_view user = colon == std::string_view::npos ? userinfo : userinfo.substr(0, colon);
    std::string_view pass =
        colon == std::string_view::npos ? std::string_view() : userinfo.substr(colon + 1);
    if (colon == std::string_view::npos) {
      // "redis://secret@host": a bare userinfo is the password (legacy AUTH form).
      pass = user;
      user = {};
    }
    auto u = PercentDecode(user);
    if (!u.ok()) return u.status();
    auto p = PercentDecode(pass);
    if (!p.ok()) return p.status();
    parsed.username = *u;
    parsed.password = *p;
  }

  std::string_view hostport = rest;
  std::string_view path;
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    path = rest.substr(slash + 1);
  }
  std::string_view port_text;
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == std::string_view::npos) return BadRequest("redis URL: unterminated [IPv6] host");
    parsed.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return BadRequest("redis URL: junk after [IPv6] host");
      port_text = after.substr(1);
      if (port_text.empty()) return BadRequest("redis URL: empty port");
    }
  } else {
    size_t colon = hostport.rfind(':');
    if (colon != std::string_view::npos) {
      parsed.host = std::string(hostport.substr(0, colon));
      port_text = hostport.substr(colon + 1);
      if (port_text.empty()) return BadRequest("redis URL: empty port");
    } else {
      parsed.host = std::string(hostport);
    }
  }
  if (parsed.host.empty()) return BadRequest("redis URL: missing host");
  if (!port_text.empty() && !ParseInt(port_text, 1, 65535, &parsed.port)) {
    return BadRequest("redis URL: port must be an integer 1-65535");
  }
  if (!path.empty() && !ParseInt(path, 0, 1'000'000, &parsed.db)) {
    return BadRequest("redis URL: database must be a non-negative integer");
  }
  return parsed;
}

std::string RedisUrl::Describe() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port) + "/" + std::to_string(db);
}

RedisScript::RedisScript(std::string source) : source_(std::move(source)) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(source_.data(), source_.size(), digest, &len, EVP_sha1(), nullptr) != 1) {
    return;  // empty sha1: Eval then always sends the script with EVAL
  }
  static constexpr char kHex[] = "0123456789abcdef";
  sha1_.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    sha1_.push_back(kHex[digest[i] >> 4]);
    sha1_.push_back(kHex[digest[i] & 0xf]);
  }
}

struct RedisConnection::Slot {
  std::mutex mu;
  redisContext* context = nullptr;
  std::chrono::steady_clock::time_point last_failed_connect{};
  bool ever_failed = false;
  // Sentinel mode: the primary this connection was opened to.
  SentinelPrimaryLocator::Primary primary;
  // When its last exchange was answered (DropIfStale checks a connection idle since longer).
  std::chrono::steady_clock::time_point last_answered{};

  void Drop() {
    if (context != nullptr) redisFree(context);
    context = nullptr;
  }
  ~Slot() { Drop(); }
};

namespace {

// A replica refuses every write with READONLY, from a script too ("READONLY ... script: ...").
bool IsReadOnlyError(const RedisReply& reply) {
  return reply.IsError() && reply.str.rfind("READONLY", 0) == 0;
}

bool AnyReadOnly(const std::vector<RedisReply>& replies) {
  return std::any_of(replies.begin(), replies.end(), IsReadOnlyError);
}

std::vector<std::string> ScriptCommand(const std::string& verb, const std::string& body,
                                       const std::vector<std::string>& keys,
                                       const std::vector<std::string>& args) {
  std::vector<std::string> cmd;
  cmd.reserve(3 + keys.size() + args.size());
  cmd.push_back(verb);
  cmd.push_back(body);
  cmd.push_back(std::to_string(keys.size()));
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

}  // namespace

StatusOr<std::shared_ptr<RedisConnection>> RedisConnection::Create(std::string_view url,
                                                                   RedisOptions options) {
  auto parsed = RedisUrl::Parse(url);
  if (!parsed.ok()) return parsed.status();
  if (options.pool_size < 1) options.pool_size = 1;
  if (!options.sentinels.empty() && options.primary_name.empty()) {
    return BadRequest("redis sentinels need the name of the primary's group");
  }
  if (options.wait_replicas < 0) return BadRequest("redis: wait_replicas must be >= 0");
  if (!options.password.empty()) parsed->password = options.password;
  return std::shared_ptr<RedisConnection>(new RedisConnection(*parsed, options));
}

RedisConnection::RedisConnection(RedisUrl url, RedisOptions options)
    : url_(std::move(url)), options_(options) {
  for (int i = 0; i < options_.pool_size; ++i) slots_.push_back(std::make_unique<Slot>());
  if (!options_.sentinels.empty()) {
    sentinels_ = std::make_unique<SentinelPrimaryLocator>(
        options_.sentinels, options_.primary_name, options_.sentinel_timeout,
        options_.sentinel_password);
    switch_watch_ = std::make_unique<SentinelSwitchWatch>(sentinels_.get(), options_.sentinels,
                                                          options_.sentinel_timeout);
  }
}

RedisConnection::~RedisConnection() = default;

std::string RedisConnection::Describe() const {
  if (!sentinels_) return url_.Describe();
  return "primary '" + options_.primary_name + "' via sentinels " +
         sentinels_->DescribeSentinels() + " db " + std::to_string(url_.db);
}

std::string RedisConnection::KnownPrimary() const {
  return sentinels_ ? sentinels_->KnownPrimary() : url_.Describe();
}

RedisConnection::Slot& RedisConnection::Acquire(std::unique_lock<std::mutex>* lock) {
  // The first free connection: under light load the same few carry every command, so they
  // stay recently answered (no liveness check, see kLivenessCheckAfterIdle); when all are busy,
  // the wait is spread round-robin.
  const size_t n = slots_.size();
  for (size_t i = 0; i < n; ++i) {
    Slot& slot = *slots_[i];
    std::unique_lock<std::mutex> attempt(slot.mu, std::try_to_lock);
    if (attempt.owns_lock()) {
      *lock = std::move(attempt);
      return slot;
    }
  }
  Slot& slot = *slots_[static_cast<size_t>(next_slot_.fetch_add(1) % n)];
  *lock = std::unique_lock<std::mutex>(slot.mu);
  return slot;
}

void RedisConnection::DropIfStale(Slot& slot) {
  if (slot.context == nullptr) return;
  const bool recently_answered =
      std::chrono::steady_clock::now() - slot.last_answered < kLivenessCheckAfterIdle;
  if (!recently_answered && IdleConnectionBroken(slot.context->fd)) {
    AbandonBroken(slot);
  } else if (sentinels_ && slot.primary.generation != sentinels_->generation()) {
    slot.Drop();
  }
}

void RedisConnection::AbandonBroken(Slot& slot) {
  // The spec's "handle reconnections": the address is asked for again rather than reused, so a
  // former primary that restarted as a primary before the sentinels demote it is not written to
  // (the sentinels already name its successor once they have failed over).
  if (sentinels_) sentinels_->Forget(slot.primary, /*distrust_source=*/false);
  slot.Drop();
}

Status RedisConnection::Open(Slot& slot, const RedisEndpoint& endpoint, bool verify_primary,
                             bool* not_primary) {
  auto fail = [&](const std::string& why) {
    slot.Drop();
    return Unavailable("redis " + endpoint.Describe() + ": " + why);
  };
  slot.context = redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port,
                                         ToTimeval(options_.connect_timeout));
  if (slot.context == nullptr) return fail("cannot allocate connection");
  if (slot.context->err != 0) return fail(std::string("connect failed: ") + slot.context->errstr);
  if (redisSetTimeout(slot.context, ToTimeval(options_.command_timeout)) != REDIS_OK) {
    return fail("cannot set the command timeout");
  }
  redisEnableKeepAlive(slot.context);

  auto run = [&](const std::vector<std::string>& args) -> StatusOr<RedisReply> {
    ArgvView view(args);
    auto* raw = static_cast<redisReply*>(
        redisCommandArgv(slot.context, view.argc(), view.argv.data(), view.lens.data()));
    if (raw == nullptr) return Unavailable(slot.context->errstr);
    RedisReply reply = Convert(raw);
    freeReplyObject(raw);
    return reply;
  };
  if (!url_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!url_.username.empty()) auth.push_back(url_.username);
    auth.push_back(url_.password);
    auto reply = run(auth);
    if (!reply.ok()) return fail("AUTH: " + reply.status().message());
    // The error text never contains the password, but keep it out of the message anyway.
    if (reply->IsError()) {
      server_refused_credentials_ = IsAuthenticationError(reply->str);
      return fail("authentication refused (the password of DNASERVE_REDIS_URL or "
                  "DNASERVE_REDIS_PASSWORD_FILE)");
    }
  }
  if (url_.db != 0) {
    auto reply = run({"SELECT", std::to_string(url_.db)});
    if (!reply.ok()) return fail("SELECT: " + reply.status().message());
    if (reply->IsError()) return fail("SELECT " + std::to_string(url_.db) + ": " + reply->str);
  }
  if (verify_primary) {
    // The spec's step 3: a sentinel's answer may be stale (or wrong); only the server knows.
    auto reply = run({"ROLE"});
    if (!reply.ok()) return fail("ROLE: " + reply.status().message());
    // A primary with a password, asked without one: not a reason to distrust the sentinel.
    if (reply->IsError() && IsAuthenticationError(reply->str)) {
      server_refused_credentials_ = true;
      return fail("wants a password (DNASERVE_REDIS_PASSWORD_FILE or DNASERVE_REDIS_URL): " +
                  reply->str);
    }
    const bool primary = reply->type == RedisReply::Type::kArray && !reply->elements.empty() &&
                         reply->elements[0].str == "master";
    if (!primary) {
      *not_primary = true;
      return fail("named as the primary but is not one (ROLE " +
                  (reply->type == RedisReply::Type::kArray && !reply->elements.empty()
                       ? reply->elements[0].str
                       : std::string("unexpected")) +
                  ")");
    }
  }
  server_refused_credentials_ = false;
  return Status::Ok();
}

Status RedisConnection::OpenSentinelPrimary(Slot& slot) {
  // One address per try: a primary that refuses or fails ROLE is forgotten and the sentinels
  // asked again, so a stale cache or one lying sentinel costs a try, not the call. Stops when
  // the sentinels name an address already tried (the failover has not happened yet).
  std::vector<RedisEndpoint> tried;
  Status last = Unavailable("no sentinel answered");
  for (size_t attempt = 0; attempt <= options_.sentinels.size(); ++attempt) {
    auto primary = sentinels_->Current();
    if (!primary.ok()) return primary.status();
    if (std::find(tried.begin(), tried.end(), primary->address) != tried.end()) break;
    tried.push_back(primary->address);
    bool not_primary = false;
    last = Open(slot, primary->address, /*verify_primary=*/true, &not_primary);
    if (last.ok()) {
      slot.primary = *primary;
      return last;
    }
    sentinels_->Forget(*primary, /*distrust_source=*/not_primary);
  }
  return last;
}

Status RedisConnection::EnsureConnected(Slot& slot) {
  if (slot.context != nullptr) return Status::Ok();
  auto now = std::chrono::steady_clock::now();
  if (slot.ever_failed && now - slot.last_failed_connect < options_.reconnect_backoff) {
    return Unavailable("redis " + Describe() + " unreachable (retrying shortly)");
  }
  bool unused = false;
  Status opened = sentinels_ ? OpenSentinelPrimary(slot)
                             : Open(slot, RedisEndpoint{url_.host, url_.port},
                                    /*verify_primary=*/false, &unused);
  if (!opened.ok()) {
    slot.ever_failed = true;
    slot.last_failed_connect = std::chrono::steady_clock::now();
    return opened;
  }
  slot.ever_failed = false;
  return Status::Ok();
}

void RedisConnection::AbandonDemoted(Slot& slot) {
  log::Warn("redis_readonly", {{"redis", Describe()}});
  if (sentinels_) sentinels_->Forget(slot.primary, /*distrust_source=*/false);
  slot.Drop();
}

StatusOr<std::vector<RedisReply>> RedisConnection::WithConnection(
    const std::function<StatusOr<std::vector<RedisReply>>(Slot&)>& use) {
  for (int attempt = 0;; ++attempt) {
    std::unique_lock<std::mutex> lock;
    Slot& slot = Acquire(&lock);
    DropIfStale(slot);
    DNASERVE_RETURN_IF_ERROR(EnsureConnected(slot));
    auto replies = use(slot);
    if (!replies.ok() || !AnyReadOnly(*replies)) return replies;
    AbandonDemoted(slot);
    if (attempt > 0) {
      return Unavailable("redis " + Describe() + " answered READONLY: the primary is changing");
    }
  }
}

StatusOr<std::vector<RedisReply>> RedisConnection::Exchange(
    Slot& slot, const std::vector<std::vector<std::string>>& commands) {
  std::vector<RedisReply> out;
  auto io_failure = [&]() {
    std::string why = slot.context->errstr;
    // The connection state is unknown after an I/O error or timeout: drop it, the next command
    // reconnects (in Sentinel mode to whichever server the sentinels name then).
    AbandonBroken(slot);
    log::Warn("redis_io_error", {{"redis", Describe()}, {"error", why}});
    return Unavailable("redis " + Describe() + ": " + why);
  };
  std::string encoded;
  for (const auto& args : commands) AppendRespCommand(args, &encoded);
  if (redisAppendFormattedCommand(slot.context, encoded.data(), encoded.size()) != REDIS_OK) {
    return io_failure();
  }
  out.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(slot.context, &raw) != REDIS_OK || raw == nullptr) return io_failure();
    out.push_back(Convert(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  slot.last_answered = std::chrono::steady_clock::now();
  return out;
}

StatusOr<RedisReply> RedisConnection::Command(const std::vector<std::string>& args) {
  auto replies = Pipeline({args});
  if (!replies.ok()) return replies.status();
  return std::move(replies->front());
}

StatusOr<std::vector<RedisReply>> RedisConnection::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  if (commands.empty()) return std::vector<RedisReply>();
  return WithConnection([&](Slot& slot) { return Exchange(slot, commands); });
}

StatusOr<std::vector<RedisReply>> RedisConnection::RunScript(Slot& slot, const RedisScript& script,
                                                             const std::vector<std::string>& keys,
                                                             const std::vector<std::string>& args,
                                                             bool wait) {
  std::vector<std::vector<std::string>> commands(1);
  if (wait) {
    commands.push_back({"WAIT", std::to_string(options_.wait_replicas),
                        std::to_string(options_.wait_timeout.count())});
  }
  // EVALSHA first; the server lacks the script after a restart or a failover (a replica's
  // script cache is its own), and answers NOSCRIPT: then the source goes with EVAL on the same
  // connection. A WAIT behind a NOSCRIPT has nothing to wait for and answers at once.
  if (!script.sha1().empty()) {
    commands[0] = ScriptCommand("EVALSHA", script.sha1(), keys, args);
    auto replies = Exchange(slot, commands);
    if (!replies.ok()) return replies;
    const RedisReply& first = replies->front();
    if (!(first.IsError() && first.str.rfind("NOSCRIPT", 0) == 0)) return replies;
  }
  commands[0] = ScriptCommand("EVAL", script.source(), keys, args);
  return Exchange(slot, commands);
}

StatusOr<RedisReply> RedisConnection::Eval(const RedisScript& script,
                                           const std::vector<std::string>& keys,
                                           const std::vector<std::string>& args) {
  auto replies = WithConnection(
      [&](Slot& slot) { return RunScript(slot, script, keys, args, /*wait=*/false); });
  if (!replies.ok()) return replies.status();
  RedisReply& reply = replies->front();
  if (reply.IsError()) return Unavailable("redis script error: " + reply.str);
  return std::move(reply);
}

StatusOr<ReplicatedReply> RedisConnection::EvalReplicated(const RedisScript& script,
                                                          const std::vector<std::string>& keys,
                                                          const std::vector<std::string>& args) {
  const bool wait = options_.wait_replicas > 0;
  auto replies =
      WithConnection([&](Slot& slot) { return RunScript(slot, script, keys, args, wait); });
  if (!replies.ok()) return replies.status();
  ReplicatedReply out;
  out.reply = std::move(replies->front());
  if (out.reply.IsError()) return Unavailable("redis script error: " + out.reply.str);
  if (!wait) {
    out.confirmed = true;
    return out;
  }
  const RedisReply& acked = replies->back();
  if (acked.type != RedisReply::Type::kInteger) {
    return Unavailable("redis WAIT answered " + (acked.IsError() ? acked.str : "unexpectedly"));
  }
  out.replicas = acked.integer;
  out.confirmed = out.replicas >= options_.wait_replicas;
  return out;
}

Status RedisConnection::Ping() {
  auto reply = Command({"PING"});
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kStatus || reply->str != "PONG") {
    // Without AUTH (no password configured) a server with one answers each command NOAUTH.
    if (reply->IsError() && IsAuthenticationError(reply->str)) server_refused_credentials_ = true;
    return Unavailable("redis PING answered " + (reply->IsError() ? reply->str : "unexpectedly"));
  }
  return Status::Ok();
}

bool RedisConnection::credentials_refused() const {
  return server_refused_credentials_.load() || (sentinels_ && sentinels_->credentials_refused());
}

BlockingRedisConnection::BlockingRedisConnection(std::shared_ptr<RedisConnection> redis)
    : redis_(std::move(redis)),
      slot_(std::make_unique<RedisConnection::Slot>()),
      interrupt_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

BlockingRedisConnection::~BlockingRedisConnection() {
  if (interrupt_fd_ >= 0) close(interrupt_fd_);
}

void BlockingRedisConnection::Interrupt() {
  const uint64_t one = 1;
  if (interrupt_fd_ >= 0) (void)!write(interrupt_fd_, &one, sizeof one);
}

StatusOr<RedisReply> BlockingRedisConnection::Command(const std::vector<std::string>& args,
                                                      std::chrono::milliseconds wait) {
  std::lock_guard<std::mutex> lock(mu_);
  RedisConnection::Slot& slot = *slot_;
  auto take_interrupt = [&] {
    uint64_t count = 0;
    return interrupt_fd_ >= 0 && read(interrupt_fd_, &count, sizeof count) == sizeof count;
  };
  auto interrupted = [] {
    return Status(ErrorCode::kCancelled, "the wait for redis was interrupted");
  };
  auto io_failure = [&](const std::string& why) {
    redis_->AbandonBroken(slot);
    log::Warn("redis_io_error", {{"redis", redis_->Describe()}, {"error", why}});
    return Unavailable("redis " + redis_->Describe() + ": " + why);
  };
  if (interrupt_fd_ < 0) return Internal("cannot make an eventfd for redis waits");
  if (take_interrupt()) return interrupted();
  redis_->DropIfStale(slot);
  DNASERVE_RETURN_IF_ERROR(redis_->EnsureConnected(slot));

  ArgvView view(args);
  if (redisAppendCommandArgv(slot.context, view.argc(), view.argv.data(), view.lens.data()) !=
      REDIS_OK) {
    return io_failure(slot.context->errstr);
  }
  for (int done = 0; !done;) {
    if (redisBufferWrite(slot.context, &done) != REDIS_OK) return io_failure(slot.context->errstr);
  }
  // Wait on the socket and on the interrupt together; hiredis reads only what has arrived.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(slot.context, &raw) != REDIS_OK) {
      return io_failure(slot.context->errstr);
    }
    if (raw != nullptr) {
      RedisReply reply = Convert(static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      if (IsReadOnlyError(reply)) {
        // A blocking read of a consumer group is a write: the server was demoted. Not retried
        // here (the caller's loop waits again anyway); the next command finds the primary.
        redis_->AbandonDemoted(slot);
        return Unavailable("redis " + redis_->Describe() +
                           " answered READONLY: the primary is changing");
      }
      return reply;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return io_failure("no answer within " + std::to_string(wait.count()) + " ms");
    }
    pollfd fds[2] = {{slot.context->fd, POLLIN, 0}, {interrupt_fd_, POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return io_failure("poll failed");
    if (fds[1].revents != 0 && take_interrupt()) {
      // The command is still pending on the server: only closing the connection takes it back.
      slot.Drop();
      return interrupted();
    }
    if (fds[0].revents != 0 && redisBufferRead(slot.context) != REDIS_OK) {
      return io_failure(slot.context->errstr);
    }
  }
}

}  // namespace dnaserve::core
