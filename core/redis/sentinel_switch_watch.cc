#include "core/redis/sentinel_switch_watch.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "common/log.h"
#include "core/redis/timeouts.h"

namespace dnaserve::core {
namespace {

constexpr const char* kChannel = "+switch-master";

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

std::string_view Text(const redisReply* r) {
  return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS
             ? std::string_view(r->str, r->len)
             : std::string_view();
}

// ["message", channel, payload]: the payload of a message on kChannel, else nothing.
std::optional<std::string_view> MessagePayload(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) return std::nullopt;
  if (Text(r->element[0]) != "message" || Text(r->element[1]) != kChannel) return std::nullopt;
  return Text(r->element[2]);
}

}  // namespace

std::optional<RedisEndpoint> ParseSwitchMaster(std::string_view payload,
                                               std::string_view primary_name) {
  std::vector<std::string_view> words;
  while (!payload.empty()) {
    const size_t space = payload.find(' ');
    const std::string_view word = payload.substr(0, space);
    if (!word.empty()) words.push_back(word);
    if (space == std::string_view::npos) break;
    payload.remove_prefix(space + 1);
  }
  if (words.size() != 5 || words[0] != primary_name) return std::nullopt;
  // The new address is "ip port", as a sentinel list entry would be "ip:port" (an IPv6 ip in
  // brackets there).
  std::string entry = std::string(words[3]);
  if (entry.find(':') != std::string::npos) entry = "[" + entry + "]";
  auto parsed = ParseRedisEndpoints(entry + ":" + std::string(words[4]));
  if (!parsed.ok() || parsed->size() != 1) return std::nullopt;
  return parsed->front();
}

SentinelSwitchWatch::SentinelSwitchWatch(SentinelPrimaryLocator* locator,
                                         std::vector<RedisEndpoint> sentinels,
                                         std::chrono::milliseconds connect_timeout)
    : locator_(locator),
      sentinels_(std::move(sentinels)),
      connect_timeout_(connect_timeout),
      stop_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  // Without an eventfd the thread could not be stopped: go without the watch (a switch is then
  // still found by the errors it causes, as before).
  if (stop_fd_ < 0 || sentinels_.empty()) {
    log::Warn("redis_sentinel_watch_off",
              {{"reason", stop_fd_ < 0 ? "no eventfd" : "no sentinels"}});
    return;
  }
  thread_ = std::thread([this] { Run(); });
}

SentinelSwitchWatch::~SentinelSwitchWatch() {
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (stop_fd_ >= 0) close(stop_fd_);
}

bool SentinelSwitchWatch::StopRequested(std::chrono::milliseconds timeout) const {
  pollfd stop{stop_fd_, POLLIN, 0};
  return poll(&stop, 1, static_cast<int>(timeout.count())) > 0;
}

void SentinelSwitchWatch::Run() {
  for (size_t next = 0;; ++next) {
    const RedisEndpoint& sentinel = sentinels_[next % sentinels_.size()];
    const bool subscribed = Listen(sentinel);
    // A subscription that broke: the next sentinel at once. None answering: not in a tight loop.
    if (StopRequested(subscribed ? std::chrono::milliseconds(50)
                                 : std::chrono::milliseconds(500))) {
      return;
    }
  }
}

bool SentinelSwitchWatch::Listen(const RedisEndpoint& sentinel) {
  std::unique_ptr<redisContext, ContextDeleter> context(
      redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port, ToTimeval(connect_timeout_)));
  if (context == nullptr || context->err != 0) return false;
  if (redisSetTimeout(context.get(), ToTimeval(connect_timeout_)) != REDIS_OK) return false;
  // A sentinel whose machine vanished sends no FIN: keepalive ends the wait on it.
  redisEnableKeepAlive(context.get());
  if (Status auth = AuthenticateSentinel(context.get(), locator_->password()); !auth.ok()) {
    // Commands report the refusal too (the locator asks the same sentinels with the same
    // password); here it only explains why no switch is heard.
    log::Warn("redis_sentinel_watch_refused",
              {{"sentinel", sentinel.Describe()}, {"error", auth.message()}});
    return false;
  }
  Reply confirmed(static_cast<redisReply*>(redisCommand(context.get(), "SUBSCRIBE %s", kChannel)));
  if (confirmed == nullptr || confirmed->type != REDIS_REPLY_ARRAY || confirmed->elements < 1 ||
      Text(confirmed->element[0]) != "subscribe") {
    return false;
  }
  log::Info("redis_sentinel_subscribed",
            {{"sentinel", sentinel.Describe()}, {"channel", kChannel}});
  while (true) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context.get(), &raw) != REDIS_OK) break;
    if (raw != nullptr) {
      Reply message(static_cast<redisReply*>(raw));
      const auto payload = MessagePayload(message.get());
      if (!payload) continue;
      if (auto primary = ParseSwitchMaster(*payload, locator_->primary_name())) {
        locator_->Switched(*primary, sentinel);
      }
      continue;
    }
    pollfd fds[2] = {{context->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    if (fds[0].revents != 0 && redisBufferRead(context.get()) != REDIS_OK) break;
  }
  log::Info("redis_sentinel_unsubscribed", {{"sentinel", sentinel.Describe()}});
  return true;
}

}  // namespace dnaserve::core
