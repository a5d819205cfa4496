#include "core/redis/redis_sentinel.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <utility>

#include "common/log.h"
#include "core/redis/timeouts.h"

namespace dnaserve::core {
namespace {

bool ParsePort(std::string_view s, int* port) {
  if (s.empty() || s.size() > 5) return false;
  int value = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return false;
  *port = value;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

StatusOr<RedisEndpoint> ParseEndpoint(std::string_view text) {
  RedisEndpoint endpoint;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return BadRequest("redis sentinel '" + std::string(text) + "': expected [v6]:port");
    }
    endpoint.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return BadRequest("redis sentinel '" + std::string(text) + "': expected host:port");
    }
    endpoint.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (endpoint.host.empty()) {
    return BadRequest("redis sentinel '" + std::string(text) + "': missing host");
  }
  if (!ParsePort(port_text, &endpoint.port)) {
    return BadRequest("redis sentinel '" + std::string(text) + "': port must be 1-65535");
  }
  return endpoint;
}

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};

}  // namespace

bool IsAuthenticationError(std::string_view error_reply) {
  auto starts = [&](std::string_view prefix) {
    return error_reply.substr(0, prefix.size()) == prefix;
  };
  return starts("NOAUTH") || starts("WRONGPASS") || starts("ERR invalid password") ||
         (starts("ERR AUTH") && error_reply.find("without any password configured") !=
                                    std::string_view::npos);
}

Status AuthenticateSentinel(redisContext* context, const std::string& password, bool* refused) {
  if (password.empty()) return Status::Ok();
  const char* argv[] = {"AUTH", password.c_str()};
  const size_t lens[] = {4, password.size()};
  std::unique_ptr<redisReply, ReplyDeleter> reply(
      static_cast<redisReply*>(redisCommandArgv(context, 2, argv, lens)));
  if (reply == nullptr) return Unavailable(std::string("AUTH: ") + context->errstr);
  if (reply->type != REDIS_REPLY_ERROR) return Status::Ok();
  const std::string error(reply->str, reply->len);
  if (refused != nullptr) *refused = IsAuthenticationError(error);
  // Redis's error texts never echo the password.
  return Unavailable("refused the sentinel password (DNASERVE_REDIS_SENTINEL_PASSWORD_FILE): " +
                     error);
}

std::string RedisEndpoint::Describe() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

StatusOr<std::vector<RedisEndpoint>> ParseRedisEndpoints(std::string_view list) {
  std::vector<RedisEndpoint> endpoints;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view entry = Trim(list.substr(start, end - start));
    if (entry.empty()) return BadRequest("redis sentinels: empty entry in the list");
    auto endpoint = ParseEndpoint(entry);
    if (!endpoint.ok()) return endpoint.status();
    endpoints.push_back(*endpoint);
    start = end + 1;
  }
  return endpoints;
}

SentinelPrimaryLocator::SentinelPrimaryLocator(std::vector<RedisEndpoint> sentinels,
                                               std::string primary_name,
                                               std::chrono::milliseconds ask_timeout,
                                               std::string password)
    : primary_name_(std::move(primary_name)),
      ask_timeout_(ask_timeout),
      password_(std::move(password)),
      sentinels_(std::move(sentinels)) {}

StatusOr<RedisEndpoint> SentinelPrimaryLocator::AskOne(const RedisEndpoint& sentinel,
                                                       bool* refused) const {
  std::unique_ptr<redisContext, ContextDeleter> context(
      redisConnectWithTimeout(sentinel.host.c_str(), sentinel.port, ToTimeval(ask_timeout_)));
  if (context == nullptr) return Unavailable("cannot allocate a connection");
  if (context->err != 0) return Unavailable(std::string("connect failed: ") + context->errstr);
  if (redisSetTimeout(context.get(), ToTimeval(ask_timeout_)) != REDIS_OK) {
    return Unavailable("cannot set the timeout");
  }
  DNASERVE_RETURN_IF_ERROR(AuthenticateSentinel(context.get(), password_, refused));
  const char* argv[] = {"SENTINEL", "get-master-addr-by-name", primary_name_.c_str()};
  const size_t lens[] = {8, 23, primary_name_.size()};
  std::unique_ptr<redisReply, ReplyDeleter> reply(
      static_cast<redisReply*>(redisCommandArgv(context.get(), 3, argv, lens)));
  if (reply == nullptr) return Unavailable(context->errstr);
  if (reply->type == REDIS_REPLY_NIL) {
    return Unavailable("does not know a primary named '" + primary_name_ + "'");
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string error(reply->str, reply->len);
    // A sentinel with a `requirepass` asked without a password answers NOAUTH.
    *refused = IsAuthenticationError(error);
    return Unavailable(*refused ? "wants a password (DNASERVE_REDIS_SENTINEL_PASSWORD_FILE): " + error
                                : error);
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
      reply->element[0]->type != REDIS_REPLY_STRING ||
      reply->element[1]->type != REDIS_REPLY_STRING) {
    return Unavailable("answered in an unexpected shape");
  }
  RedisEndpoint primary;
  primary.host.assign(reply->element[0]->str, reply->element[0]->len);
  if (primary.host.empty() ||
      !ParsePort({reply->element[1]->str, reply->element[1]->len}, &primary.port)) {
    return Unavailable("answered an address that is not host and port");
  }
  return primary;
}

StatusOr<SentinelPrimaryLocator::Primary> SentinelPrimaryLocator::Current() {
  // Held while asking: concurrent callers wait for one answer instead of each asking (every
  // ask is bounded by ask_timeout_ per sentinel).
  std::lock_guard<std::mutex> lock(mu_);
  if (known_) return Primary{*known_, generation_.load()};
  std::string failures;
  size_t refusals = 0;
  size_t answered = 0;  // sentinels that could be reached at all
  for (size_t i = 0; i < sentinels_.size(); ++i) {
    const RedisEndpoint sentinel = sentinels_[i];
    bool refused = false;
    auto answer = AskOne(sentinel, &refused);
    if (refused) ++refusals;
    if (!answer.ok()) {
      if (answer.status().message().rfind("connect failed", 0) != 0) ++answered;
      failures += (failures.empty() ? "" : "; ") + sentinel.Describe() + ": " +
                  answer.status().message();
      continue;
    }
    // The sentinel that answered is asked first next time (the spec's step 1).
    std::rotate(sentinels_.begin(), sentinels_.begin() + static_cast<long>(i),
                sentinels_.begin() + static_cast<long>(i) + 1);
    if (!last_ || !(*last_ == *answer)) {
      ++generation_;
      log::Info("redis_primary_found", {{"primary", answer->Describe()},
                                        {"sentinel", sentinel.Describe()},
                                        {"name", primary_name_}});
    }
    known_ = last_ = *answer;
    known_source_ = sentinel;
    credentials_refused_ = false;
    return Primary{*known_, generation_.load()};
  }
  credentials_refused_ = refusals > 0 && refusals == answered;
  return Unavailable("no sentinel named the redis primary '" + primary_name_ + "' (" + failures +
                     ")");
}

void SentinelPrimaryLocator::Forget(const Primary& primary, bool distrust_source) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!known_ || !(*known_ == primary.address) || primary.generation != generation_) return;
  known_.reset();
  if (!distrust_source) return;
  auto it = std::find(sentinels_.begin(), sentinels_.end(), known_source_);
  if (it != sentinels_.end()) std::rotate(it, it + 1, sentinels_.end());
  log::Warn("redis_sentinel_named_a_non_primary", {{"sentinel", known_source_.Describe()},
                                          {"named", primary.address.Describe()},
                                          {"name", primary_name_}});
}

void SentinelPrimaryLocator::Switched(const RedisEndpoint& primary, const RedisEndpoint& source) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool moved = !last_ || !(*last_ == primary);
  known_ = last_ = primary;
  known_source_ = source;
  if (!moved) return;
  ++generation_;
  log::Info("redis_primary_switched", {{"primary", primary.Describe()},
                                       {"sentinel", source.Describe()},
                                       {"name", primary_name_}});
}

std::string SentinelPrimaryLocator::KnownPrimary() const {
  std::lock_guard<std::mutex> lock(mu_);
  return known_ ? known_->Describe() : std::string();
}

uint64_t SentinelPrimaryLocator::generation() const { return generation_.load(); }

std::string SentinelPrimaryLocator::DescribeSentinels() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& s : sentinels_) out += (out.empty() ? "" : ",") + s.Describe();
  return out;
}

}  // namespace dnaserve::core
