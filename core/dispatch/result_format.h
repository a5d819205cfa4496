// The worker's PredictRequest.result_format for a negotiated output format, so that a worker
// renders and sends only what the reply will be made of (worker.proto ResultFormat).
#pragma once

#include "common/task.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

inline worker::v1::ResultFormat ResultFormatFor(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return worker::v1::RESULT_FORMAT_JSON;
    case OutputFormat::kBed:
      return worker::v1::RESULT_FORMAT_BED;
    case OutputFormat::kBedGraph:
      return worker::v1::RESULT_FORMAT_BEDGRAPH;
    case OutputFormat::kGff3:
      return worker::v1::RESULT_FORMAT_GFF3;
  }
  return worker::v1::RESULT_FORMAT_UNSPECIFIED;  // everything: readable whatever was asked
}

}  // namespace dnaserve::core
