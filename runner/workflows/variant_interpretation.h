// The genomic-variant-interpretation workflow without HTTP or JSON: the checks made before a
// job is accepted (the object's address, the gene panel, the object itself) and the job's run
// (download, annotate, upload), both over the shared VariantResources.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/s3_grants.h"
#include "common/status.h"
#include "runner/genome/gene_panel.h"
#include "core/jobs/job.h"
#include "runner/s3/s3_client.h"
#include "runner/s3/s3_uri.h"
#include "core/validation/variant_request.h"
#include "runner/variant/annotate_vcf.h"
#include "runner/variant/expression_scorer.h"
#include "runner/workflows/variant_resources.h"

namespace dnaserve::runner {

// Whose objects a case may use: the client (whose own store credentials sign its requests when
// the operator gave it some, VariantResources::StoreFor) and its grants, as its gateway queued
// them. No grants: no object.
struct S3Access {
  std::string client_id;
  S3Grants grants;
};

// Everything the job needs, decided before it is accepted.
struct VariantCase {
  S3Access access;
  core::ValidatedVariant request;
  s3::S3ObjectUri input;
  s3::S3ObjectUri output;   // <name>.annotated.<first 8 of job_id>.vcf.gz beside the input
  s3::S3ObjectInfo object;  // size and ETag when accepted: the job reads exactly this version
  std::optional<variant::GenePanel> panel;
};

// The pre-acceptance checks, each a 400 bad_request unless the store itself fails (503, or 500
// when it refuses the service's own credentials), in this order: the URI's form, prefix and
// suffix; the caller's grants (the input under s3_read, the output's prefix under s3_write:
// otherwise S3ObjectUnreadable / S3PrefixUnwritable, exactly as a missing object or a refused
// write, and no request to the store); a catalogue for the genome build; every gene identifier resolved (all unresolved ones
// named); the object readable, not empty and at most 2 GiB (HEAD); its first 64 KiB a VCF header
// without GEX_* fields (a header longer than that is checked in full by the job); the output
// name within S3's key limit. No object store configured -> 503.
StatusOr<VariantCase> AdmitVariantCase(core::ValidatedVariant request, const VariantResources& resources,
                                       const std::string& job_id, S3Access access);

// The job-identity key of a case: the same client, input.uri, object ETag, client_ref and
// options (build, window, tissues in order, the resolved panel or none) give the same key.
std::string VariantCaseIdentity(const std::string& client_id, const VariantCase& c);

struct VariantRunResult {
  variant::AnnotateResult annotation;
  s3::S3ObjectUri output;
  int64_t output_bytes = 0;
};

// Runs the job in a private temporary directory under resources.work_dir(), removed on every
// path (the grants are checked again before the download and before the upload): GetObject pinned to the accepted ETag (progress 0-10 %), AnnotateVcf (10-95 %), then one
// PutObject of the finished file (95-100 %). Nothing is uploaded unless the whole output was
// written and read back; the input object is only ever read. Bad content in the file fails with
// bad_request naming the record; cancellation with service_unavailable.
StatusOr<VariantRunResult> RunVariantInterpretation(const VariantCase& c,
                                                    const VariantResources& resources,
                                                    variant::ExpressionScorer& scorer,
                                                    const core::JobContext& context);

}  // namespace dnaserve::runner
