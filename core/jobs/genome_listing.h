// The reference genomes the runners hold, as GET /v1/genomes lists them. The gateway reads no
// reference (it links no htslib), so each runner publishes what it loaded at start-up into one
// Redis hash, `dnaserve:genomes` (field: assembly, value: that assembly's JSON object), and the
// gateway reads the hash. Why not a job through the queue: the listing is fixed once a runner has
// loaded its reference, it costs one HGETALL instead of a runner slot and a queue round trip, and
// it answers while every runner is busy. Runners with the same assembly write the same value;
// an assembly no runner holds any more stays listed until an operator deletes its field.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "core/redis/redis_connection.h"

namespace dnaserve::core {

class GenomeListing {
 public:
  explicit GenomeListing(std::shared_ptr<RedisConnection> redis,
                         std::string key_prefix = "dnaserve:");
  // Runner side: `json` is one assembly's object (name, contigs with length and md5).
  Status Publish(const std::string& assembly, const std::string& json);
  // Gateway side: assembly -> its object, as published; empty when no runner published.
  StatusOr<std::map<std::string, std::string>> Read() const;

 private:
  std::shared_ptr<RedisConnection> redis_;
  std::string key_;
};

}  // namespace dnaserve::core
