// Admission of a VCF posted to POST /v1/variants/score (Content-Type text/x-vcf, text/vcf or
// application/gzip for bgzip/gzip): the records -> the variants of a batch job.
//
// Bounds, each a 413 payload_too_large in the error envelope naming the bound and the fix:
// - the body itself: the gateway's 16 MiB request limit (compressed, as sent);
// - the text it inflates to: kMaxVcfTextBytes. Inflation stops as soon as the bound is passed,
//   so a gzip bomb costs at most that much memory, never its full size;
// - records: kMaxBatchScoreVariants (core/validation/variant_score_request.h); a multi-allelic
//   record counts once per ALT, as it is scored.
// A body that is not a VCF (no #CHROM line, a corrupt gzip stream, BCF) is 400 bad_request.
//
// Each ALT of a record is one variant, "CHROM:POS:REF:ALT" as its input. What is wrong with one
// of them is that variant's error, exactly as for a JSON variant (symbolic or '*' ALT, missing
// '.', indel longer than 50 bp, non-ACGTN); the runner adds the reference checks. Lower-case
// alleles are upper-cased, as in JSON. Scorers come from ?scorers=splice,chromatin,promoter
// (default splice) with their default options; expression needs contexts, so it is JSON-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "core/validation/variant_score_request.h"

namespace dnaserve::core {

// 64 MiB of text: 20,000 sites-only records take a few MB; a file with many samples passes it
// long before its record limit (drop the genotypes first: bcftools view -G).
inline constexpr int64_t kMaxVcfTextBytes = 64LL << 20;

// A VCF call as the transport hands it over.
struct VcfScoreCall {
  std::string_view body;                // as sent (plain, gzip or bgzip)
  std::optional<std::string> scorers;   // ?scorers=
  std::optional<std::string> assembly;  // ?assembly= (default GRCh37)
};

// True for the media types a VCF body is posted with (parameters ignored, case-insensitive).
bool IsVcfContentType(std::string_view content_type);

StatusOr<ValidatedVariantScore> ValidateVariantScoreVcf(const VcfScoreCall& call);

// The body's text: gzip (any number of members, as bgzip writes) inflated up to `max_bytes`,
// anything else as is. Exposed for tests.
StatusOr<std::string> InflateVcfBody(std::string_view body, int64_t max_bytes);

}  // namespace dnaserve::core
