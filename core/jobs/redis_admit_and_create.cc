#include "core/jobs/redis_admit_and_create.h"

#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace dnaserve::core {
namespace {

// The quota's decision code (RedisQuotaStore's script answers 0, 1 or 2) for "the job id is
// already in use": checked first, so nothing is taken then.
constexpr int64_t kJobIdTaken = 3;

// KEYS: the quota's two (bucket, leases), then the create step's three (job, seen, index).
// ARGV: the quota script's eight, then the create step's. Each part runs as a function whose
// parameters stand in for KEYS and ARGV, so both run exactly as in their own scripts. Returns
// the quota's reply {code, limit, remaining, reset_seconds, retry_after_seconds}.
const RedisScript& AdmitAndCreateScript() {
  static const RedisScript script(
      "local function quota(KEYS, ARGV)\n" + RedisQuotaStore::ScriptLua() + "\nend\n" +
      "local function create(KEYS, ARGV)\n" + RedisJobStore::CreateStepSource() +
      "\nreturn {'created'}\nend\n" + R"lua(
if redis.call('EXISTS', KEYS[3]) == 1 or redis.call('EXISTS', KEYS[4]) == 1 then
  return {)lua" + std::to_string(kJobIdTaken) + R"lua(, 0, 0, 0, 0}
end
local decided = quota({KEYS[1], KEYS[2]}, {unpack(ARGV, 1, 8)})
if decided[1] ~= 0 then return decided end
create({KEYS[3], KEYS[4], KEYS[5]}, {unpack(ARGV, 9)})
return decided
)lua");
  return script;
}

}  // namespace

QuotaDecision RedisAdmitAndCreate::Run(const Principal& principal, int64_t lease_ttl_ms,
                                       const JobRecord& record) {
  if (record.job_id.empty() || record.owner.empty()) {
    QuotaDecision refused;
    refused.status = Internal("job record without job_id or owner");
    return refused;
  }
  std::vector<std::string> keys = quotas_->ScriptKeys(principal);
  std::vector<std::string> create_keys = jobs_->CreateKeys(record);
  keys.insert(keys.end(), std::make_move_iterator(create_keys.begin()),
              std::make_move_iterator(create_keys.end()));
  std::vector<std::string> args =
      quotas_->ScriptArgs("admit", principal, record.job_id, lease_ttl_ms);
  std::vector<std::string> create_args = jobs_->CreateStepArgs(record);
  args.insert(args.end(), std::make_move_iterator(create_args.begin()),
              std::make_move_iterator(create_args.end()));

  auto result = RedisQuotaStore::ParseReply("admit_and_create",
                                            redis_->Eval(AdmitAndCreateScript(), keys, args));
  if (result.ok() && result->code == kJobIdTaken) {
    QuotaDecision taken;
    taken.status = Status(ErrorCode::kConflict, "job " + record.job_id + " already exists");
    return taken;
  }
  return RedisQuotaStore::AdmitDecision(principal, result);
}

}  // namespace dnaserve::core
