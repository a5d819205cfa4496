// `s3://bucket/key` object addresses: the variant workflow's input rule and its output name.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "common/variant_limits.h"

namespace dnaserve::s3 {

struct S3ObjectUri {
  std::string bucket;
  std::string key;  // literal, never %-decoded (as the AWS tools treat s3:// URIs)

  std::string ToString() const { return "s3://" + bucket + "/" + key; }
};

// Length bounds of `input.uri` (spec: 8-1,024 characters).
// S3 refuses keys longer than this many bytes.
inline constexpr size_t kMaxS3KeyBytes = 1024;

// Any object: `s3://<bucket>/<key>` with a valid S3 bucket name (3-63 characters of a-z, 0-9, '.'
// and '-', starting and ending with a letter or digit; this also keeps a virtual-hosted request
// on the configured endpoint's domain) and a key that names one object (no trailing '/', no
// control characters). Every failure is bad_request with a message naming the rule broken.
StatusOr<S3ObjectUri> ParseS3ObjectUri(std::string_view uri);

// The variant workflow's input: ParseS3ObjectUri plus the spec's length bounds and a key ending
// `.vcf`, `.vcf.gz` or `.vcf.bgz` after a non-empty name.
StatusOr<S3ObjectUri> ParseVcfObjectUri(std::string_view uri);

// `<prefix>/<name>.vcf[.gz|.bgz]` -> `<prefix>/<name>.annotated.<first 8 of job_id>.vcf.gz` in
// the same bucket (the output is always bgzip). bad_request when the input is not a VCF key,
// the job id is shorter than 8 characters, or the new key would pass S3's 1,024-byte limit.
StatusOr<S3ObjectUri> AnnotatedOutputUri(const S3ObjectUri& input, std::string_view job_id);

}  // namespace dnaserve::s3
