// A QuotaStore test double for the job runners and the after-reply writes: admits everything and
// counts lease renewals and releases (what those tests check a job did with its lease).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/quota/quota.h"

namespace dnaserve::testing {

class CountingQuotaStore : public core::QuotaStore {
 public:
  core::QuotaDecision Admit(const core::Principal&, const std::string&, int64_t) override {
    return {};
  }
  core::RateLimitInfo Peek(const core::Principal&) override { return {}; }
  void Release(const core::Principal&, const std::string&) override { ++released; }
  void Renew(const core::Principal&, const std::string&, int64_t) override { ++renewed; }
  std::atomic<int> renewed{0};
  std::atomic<int> released{0};
};

}  // namespace dnaserve::testing
