#include "core/jobs/genome_listing.h"

#include <utility>

namespace dnaserve::core {

GenomeListing::GenomeListing(std::shared_ptr<RedisConnection> redis, std::string key_prefix)
    : redis_(std::move(redis)), key_(std::move(key_prefix) + "genomes") {}

Status GenomeListing::Publish(const std::string& assembly, const std::string& json) {
  auto reply = redis_->Command({"HSET", key_, assembly, json});
  if (!reply.ok()) return reply.status();
  if (reply->IsError()) return Unavailable("publishing the genome listing: " + reply->str);
  return Status::Ok();
}

StatusOr<std::map<std::string, std::string>> GenomeListing::Read() const {
  auto reply = redis_->Command({"HGETALL", key_});
  if (!reply.ok()) return reply.status();
  if (reply->IsError()) return Unavailable("reading the genome listing: " + reply->str);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
    out[reply->elements[i].str] = reply->elements[i + 1].str;
  }
  return out;
}

}  // namespace dnaserve::core
