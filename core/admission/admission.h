// Admission: everything decided about a job-creating call before a job exists, whatever door
// it came through (the HTTP gateway, MCP, a runner reading a queue entry of the previous
// release). Each function validates the body, negotiates the output format and resolves the
// models, and returns the admitted job or the Status to refuse it with. A refusal creates no job.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/task.h"
#include "core/dispatch/model_catalogue.h"
#include "core/validation/find_genes_request.h"
#include "core/validation/predict_request.h"
#include "core/validation/variant_request.h"
#include "core/validation/variant_score_request.h"
#include "core/validation/variant_score_vcf.h"

namespace dnaserve::core {

// A job-creating call as its transport hands it over.
struct CallInput {
  std::string_view body;                    // JSON
  std::optional<std::string> query_format;  // ?format=
  std::optional<std::string> accept;        // the Accept header
  bool async = false;                       // the caller asked to poll for the result
};

struct AdmittedPredict {
  ValidatedPredict input;  // input.request.model() is the resolved model
  OutputFormat format = OutputFormat::kJson;
};
StatusOr<AdmittedPredict> AdmitPredict(std::string_view task_name, const CallInput& call,
                                       const ModelCatalogue& catalogue);

struct AdmittedFindGenes {
  ValidatedFindGenes input;
  std::string annotation_model;  // resolved ids
  std::string expression_model;
};
StatusOr<AdmittedFindGenes> AdmitFindGenes(const CallInput& call, const ModelCatalogue& catalogue);

// The variant workflow's admission as far as it can go without the object store (the runner
// makes the rest); async only.
StatusOr<ValidatedVariant> AdmitVariant(const CallInput& call);

// POST /v1/variants/score: synchronous only (up to 100 variants), JSON only; each requested
// scorer's model resolved to its task's default. A scorer whose task no worker serves is 503
// naming the scorer.
struct AdmittedVariantScore {
  ValidatedVariantScore input;
  std::string splice_model;  // empty when the splice scorer was not asked for (likewise below)
  std::string expression_model;
  std::string chromatin_model;
  std::string promoter_model;
  // An async batch job (more than kMaxSyncScoreVariants variants, or a VCF body):
  // runner/workflows/variant_score_batch.h.
  bool batch = false;
};
StatusOr<AdmittedVariantScore> AdmitVariantScore(const CallInput& call,
                                                 const ModelCatalogue& catalogue);
// The same for a VCF body (core/validation/variant_score_vcf.h): always a batch job, async.
StatusOr<AdmittedVariantScore> AdmitVariantScoreVcf(const VcfScoreCall& call,
                                                    const ModelCatalogue& catalogue);

}  // namespace dnaserve::core
