#include "runner/s3/s3_uri.h"

#include <array>

#include "common/s3_grants.h"

namespace dnaserve::s3 {
namespace {

constexpr std::array<std::string_view, 3> kVcfSuffixes = {".vcf", ".vcf.gz", ".vcf.bgz"};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The part of `key` before its VCF suffix, or npos when it has none.
size_t VcfNameEnd(std::string_view key) {
  for (auto suffix : kVcfSuffixes) {
    if (EndsWith(key, suffix)) return key.size() - suffix.size();
  }
  return std::string_view::npos;
}

}  // namespace

StatusOr<S3ObjectUri> ParseS3ObjectUri(std::string_view uri) {
  auto parts = SplitS3Uri(uri);  // scheme, bucket name, non-empty key
  if (!parts.ok()) return parts.status();
  const std::string& key = parts->key;
  if (key.back() == '/') {
    return BadRequest("input.uri names a prefix (it ends with '/'); it must name one object");
  }
  if (key.size() > kMaxS3KeyBytes) {
    return BadRequest("input.uri: the object key is longer than S3's limit of 1,024 bytes");
  }
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return BadRequest("input.uri: the object key contains a control character");
    }
  }
  return S3ObjectUri{std::move(parts->bucket), key};
}

StatusOr<S3ObjectUri> ParseVcfObjectUri(std::string_view uri) {
  if (uri.size() < kMinS3UriLength || uri.size() > kMaxS3UriLength) {
    return BadRequest("input.uri must be 8-1,024 characters long (it has " +
                      std::to_string(uri.size()) + ")");
  }
  auto parsed = ParseS3ObjectUri(uri);
  if (!parsed.ok()) return parsed.status();
  const std::string& key = parsed->key;
  size_t name_end = VcfNameEnd(key);
  if (name_end == std::string_view::npos) {
    return BadRequest("input.uri: the object key must end with .vcf, .vcf.gz or .vcf.bgz");
  }
  if (name_end == 0 || key[name_end - 1] == '/') {
    return BadRequest("input.uri: the object name before its .vcf suffix is empty");
  }
  return parsed;
}

StatusOr<S3ObjectUri> AnnotatedOutputUri(const S3ObjectUri& input, std::string_view job_id) {
  size_t name_end = VcfNameEnd(input.key);
  if (name_end == std::string_view::npos || name_end == 0) {
    return BadRequest("the input key does not end with .vcf, .vcf.gz or .vcf.bgz");
  }
  if (job_id.size() < 8) return Internal("job id too short for an output name");
  S3ObjectUri out{input.bucket, input.key.substr(0, name_end) + ".annotated." +
                                    std::string(job_id.substr(0, 8)) + ".vcf.gz"};
  if (out.key.size() > kMaxS3KeyBytes) {
    return BadRequest("the annotated copy's key (" + std::to_string(out.key.size()) +
                      " bytes) would pass S3's 1,024-byte limit; shorten the input key");
  }
  return out;
}

}  // namespace dnaserve::s3
