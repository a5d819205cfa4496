// The job of an admitted prediction: one worker call, rendered as JSON or as the requested
// text track. Run by a gateway for sync calls and by a runner for queued ones.
#pragma once

#include <memory>
#include <string>

#include "core/admission/admission.h"
#include "core/dispatch/inference_backend.h"
#include "core/jobs/job.h"
#include "dnaserve/worker/v1/worker.pb.h"

namespace dnaserve::core {

std::unique_ptr<Job> MakePredictJob(InferenceBackend* backend, AdmittedPredict admitted);

// A worker's progress event as a poll message: its own text, else "processed 3 of 8 windows".
std::string WorkerProgressMessage(const worker::v1::Progress& progress);

}  // namespace dnaserve::core
