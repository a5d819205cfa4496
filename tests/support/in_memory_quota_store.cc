#include "tests/support/in_memory_quota_store.h"

#include "core/quota/quota_decision.h"

namespace dnaserve::core {
namespace {

void PurgeExpired(int64_t now_ms, std::map<std::string, int64_t>* leases) {
  for (auto it = leases->begin(); it != leases->end();) {
    it = it->second <= now_ms ? leases->erase(it) : std::next(it);
  }
}

}  // namespace

InMemoryQuotaStore::InMemoryQuotaStore(const Clock* clock)
    : clock_(clock ? clock : &DefaultClock()) {}

InMemoryQuotaStore::ClientState& InMemoryQuotaStore::StateFor(const Principal& principal,
                                                              const BucketConfig& config,
                                                              int64_t now_ms) {
  auto it = clients_.find(principal.client_id);
  if (it == clients_.end()) {
    it = clients_.emplace(principal.client_id, ClientState{FullBucket(config, now_ms), {}}).first;
  }
  return it->second;
}

void InMemoryQuotaStore::DropIfIdle(const std::string& client_id, const BucketConfig& config) {
  auto it = clients_.find(client_id);
  if (it == clients_.end()) return;
  // A full bucket without leases is what an unknown client gets anyway.
  if (it->second.leases.empty() && MsUntilFull(config, it->second.bucket) == 0) {
    clients_.erase(it);
  }
}

QuotaDecision InMemoryQuotaStore::Admit(const Principal& principal, const std::string& lease_id,
                                        int64_t lease_ttl_ms) {
  const BucketConfig config = BucketConfigForRate(principal.rate_per_minute);
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  ClientState& state = StateFor(principal, config, now);
  PurgeExpired(now, &state.leases);

  if (static_cast<int64_t>(state.leases.size()) >= principal.max_concurrency) {
    RateLimitInfo info = InfoFrom(PeekBucket(config, now, &state.bucket));
    return ConcurrencyRefusal(principal, info);
  }
  BucketDecision bucket = TakeToken(config, now, &state.bucket);
  if (!bucket.admitted) {
    QuotaDecision d = RateRefusal(principal, InfoFrom(bucket), bucket.retry_after_seconds);
    DropIfIdle(principal.client_id, config);
    return d;
  }
  state.leases[lease_id] = now + lease_ttl_ms;
  QuotaDecision d;
  d.info = InfoFrom(bucket);
  return d;
}

RateLimitInfo InMemoryQuotaStore::Peek(const Principal& principal) {
  const BucketConfig config = BucketConfigForRate(principal.rate_per_minute);
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(principal.client_id);
  BucketState bucket = it == clients_.end() ? FullBucket(config, now) : it->second.bucket;
  return InfoFrom(PeekBucket(config, now, &bucket));
}

void InMemoryQuotaStore::Release(const Principal& principal, const std::string& lease_id) {
  const BucketConfig config = BucketConfigForRate(principal.rate_per_minute);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(principal.client_id);
  if (it == clients_.end()) return;
  it->second.leases.erase(lease_id);
  Refill(config, clock_->NowMs(), &it->second.bucket);
  DropIfIdle(principal.client_id, config);
}

void InMemoryQuotaStore::Renew(const Principal& principal, const std::string& lease_id,
                               int64_t lease_ttl_ms) {
  const int64_t now = clock_->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(principal.client_id);
  if (it == clients_.end()) return;
  auto lease = it->second.leases.find(lease_id);
  // An expired lease is gone: renewing must not resurrect it past the cap.
  if (lease == it->second.leases.end() || lease->second <= now) return;
  lease->second = now + lease_ttl_ms;
}

size_t InMemoryQuotaStore::tracked_clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return clients_.size();
}

}  // namespace dnaserve::core
