// gRPC metadata keys shared by the gateway (client) and the workers (server).
#pragma once

namespace dnaserve {

// Client -> worker: the ids that tie a worker's log lines to the gateway's request and job.
inline constexpr const char* kRequestIdMetadata = "x-request-id";
inline constexpr const char* kJobIdMetadata = "x-job-id";

// Worker -> client, in the initial metadata a worker sends as soon as its Predict handler starts.
// A call that fails without it never reached a worker's handler, so the gateway may safely try
// another replica; once it is present the work has begun and a failure is final.
inline constexpr const char* kAcceptedMetadata = "x-dnaserve-accepted";

}  // namespace dnaserve
