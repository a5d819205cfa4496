// The tenant a request or a job acts for: its client id, its key's limits and its object-store
// grants. The gateway's key store produces it; quotas, jobs and runners carry it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/s3_grants.h"

namespace dnaserve::core {

struct Principal {
  Principal() = default;
  // (Not an aggregate, so Principal{id, rate, concurrency} leaves no member uninitialised.)
  explicit Principal(std::string id, int64_t rate = 60, int64_t concurrency = 2,
                     std::shared_ptr<const S3Grants> grants = nullptr)
      : client_id(std::move(id)),
        rate_per_minute(rate),
        max_concurrency(concurrency),
        s3(std::move(grants)) {}

  std::string client_id;
  int64_t rate_per_minute = 60;
  int64_t max_concurrency = 2;
  // Shared, so copying a principal per request costs no allocation; null = no grants.
  std::shared_ptr<const S3Grants> s3;

  const std::vector<S3Grant>& s3_read() const;
  const std::vector<S3Grant>& s3_write() const;
};

}  // namespace dnaserve::core
