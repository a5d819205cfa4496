// QuotaStore in process memory: the same semantics as RedisQuotaStore for a single gateway
// (and for unit tests of handlers). State is lost on restart and not shared between replicas.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/quota/clock.h"
#include "core/quota/quota.h"
#include "core/quota/token_bucket.h"

namespace dnaserve::core {

class InMemoryQuotaStore : public QuotaStore {
 public:
  // `clock` must outlive the store; nullptr means the system clock.
  explicit InMemoryQuotaStore(const Clock* clock = nullptr);

  QuotaDecision Admit(const Principal& principal, const std::string& lease_id,
                      int64_t lease_ttl_ms) override;
  RateLimitInfo Peek(const Principal& principal) override;
  void Release(const Principal& principal, const std::string& lease_id) override;
  void Renew(const Principal& principal, const std::string& lease_id,
             int64_t lease_ttl_ms) override;

  // Clients with state (a bucket that is not full, or leases); idle clients are dropped.
  size_t tracked_clients() const;

 private:
  struct ClientState {
    BucketState bucket;
    std::map<std::string, int64_t> leases;  // lease id -> expiry (ms)
  };
  ClientState& StateFor(const Principal& principal, const BucketConfig& config, int64_t now_ms);
  void DropIfIdle(const std::string& client_id, const BucketConfig& config);

  const Clock* clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, ClientState> clients_;
};

}  // namespace dnaserve::core
