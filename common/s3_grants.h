// Object-storage grants per client: which `s3://bucket/prefix/` a client may read and which it
// may write (the keys file's `s3_read` and `s3_write`). The gateway checks them before it queues
// a job and the runner again before any request to the store, so both need this without the S3
// client: pure string rules, no store access.
//
// Matching is literal, as S3 treats keys: byte for byte, case-sensitive, nothing %-decoded or
// normalised. A grant's prefix ends with '/' (or is empty: the whole bucket), so `s3://b/alice/`
// covers `s3://b/alice/x.vcf` but never `s3://b/alice-evil/x.vcf`. A key with a `.` or `..`
// segment is covered by no grant: S3 keeps `alice/../bob/x` literally, but a proxy or another
// S3-compatible store may resolve it into `bob/x` (or, path-style, out of the bucket).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve {

struct S3Grant {
  std::string bucket;
  std::string prefix;  // "" (the whole bucket) or ends with '/'

  std::string ToString() const { return "s3://" + bucket + "/" + prefix; }
};

struct S3Grants {
  std::vector<S3Grant> read;
  std::vector<S3Grant> write;
};

// S3's naming rules for general purpose buckets: 3-63 characters of a-z, 0-9, '.' and '-',
// starting and ending with a letter or digit, no "..", ".-" or "-.", not an IP address.
bool IsValidS3BucketName(std::string_view name);

// `s3://bucket/key` split at the first '/' after the bucket. bad_request (messages about
// `input.uri`) unless the scheme is s3://, bucket and key are non-empty and the bucket name is
// valid. The key is returned literally.
struct S3UriParts {
  std::string bucket;
  std::string key;
};
StatusOr<S3UriParts> SplitS3Uri(std::string_view uri);

// A keys-file grant: `s3://bucket/` or `s3://bucket/prefix/`. bad_request naming the rule broken
// (no trailing '/', an invalid bucket, an empty, "." or ".." segment, a control character).
StatusOr<S3Grant> ParseS3Grant(std::string_view text);

// Whether one of `grants` covers the object (see the file comment for the rules).
bool S3GrantsCover(const std::vector<S3Grant>& grants, std::string_view bucket,
                   std::string_view key);
// The same for a URI as sent; false when it does not split as s3://bucket/key.
bool S3GrantsCoverUri(const std::vector<S3Grant>& grants, std::string_view uri);
// Whether one of `grants` covers every object directly in `prefix_uri` (an S3ParentPrefix:
// `s3://bucket/` or `s3://bucket/dir/`), i.e. any output written beside an input there.
bool S3GrantsCoverPrefix(const std::vector<S3Grant>& grants, std::string_view prefix_uri);

// `s3://bucket/dir/` of `s3://bucket/dir/name` (the prefix an object beside it is written in);
// `s3://bucket/` for a key without '/'. The input is returned unchanged when it does not split.
std::string S3ParentPrefix(std::string_view uri);

// The one answer to "this client cannot read that object", whatever the reason: outside its
// s3_read grants (decided without asking the store), missing, in a missing bucket, or refused to
// the service by the store. One code and one message with only the URI in it, so a client learns
// nothing about objects it is not granted.
Status S3ObjectUnreadable(std::string_view uri);
// The same for writing: the output would be written into `prefix` (an S3ParentPrefix), which is
// outside the client's s3_write grants, in a missing bucket, or refused to the service.
Status S3PrefixUnwritable(std::string_view prefix);

// The names under which a queued job carries its client's grants (core::QueuedJob::facts).
inline constexpr std::string_view kS3ReadFact = "s3_read";
inline constexpr std::string_view kS3WriteFact = "s3_write";

// Grants as one text value (one grant a line), to travel with a queued job; decoding drops
// anything that is not a well-formed grant (so a damaged list grants less, never more).
std::string EncodeS3Grants(const std::vector<S3Grant>& grants);
std::vector<S3Grant> DecodeS3Grants(std::string_view text);

}  // namespace dnaserve
