// The only place where a dnaserve Status crosses to and from a gRPC status.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace dnaserve {

// ErrorCode -> gRPC code, with a serialised WorkerError in error_details so the peer can
// rebuild the same Status (code name, record-cap details, retry hint).
grpc::Status ToGrpcStatus(const Status& status);

// Inverse of ToGrpcStatus. A status without WorkerError details (a transport failure such as
// UNAVAILABLE or DEADLINE_EXCEEDED from the channel itself) maps by gRPC code:
// UNAVAILABLE -> service_unavailable, DEADLINE_EXCEEDED -> service_unavailable, others -> internal.
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace dnaserve
