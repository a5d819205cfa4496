#include "runner/s3/s3_uri.h"

#include <array>
#include <cctype>

namespace dnaserve::gateway {
namespace {

constexpr std::string_view kScheme = "s3://";
constexpr std::array<std::string_view, 3> kVcfSuffixes = {".vcf", ".vcf.gz", ".vcf.bgz"};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// S3's naming rules for buckets (general purpose buckets).
bool ValidBucketName(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return false;
  auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c));
  };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  bool all_digits_and_dots = true;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (!alnum(c) && c != '.' && c != '-') return false;
    if (c == '.' && i + 1 < name.size() && (name[i + 1] == '.' || name[i + 1] == '-')) return false;
    if (c == '-' && i + 1 < name.size() && name[i + 1] == '.') return false;
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') all_digits_and_dots = false;
  }
  return !all_digits_and_dots;  // an IP-address-like name is not a bucket
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
  if (uri.substr(0, kScheme.size()) != kScheme) {
    return BadRequest("input.uri must have the form s3://bucket/key");
  }
  std::string_view rest = uri.substr(kScheme.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return BadRequest(
        "input.uri must have the form s3://bucket/key (bucket and key both "
        "non-empty)");
  }
  std::string_view bucket = rest.substr(0, slash);
  std::string_view key = rest.substr(slash + 1);
  if (!ValidBucketName(bucket)) {
    return BadRequest("input.uri: '" + std::string(bucket) +
                      "' is not a valid S3 bucket name (3-63 characters: lower-case letters, "
                      "digits, '.' and '-', starting and ending with a letter or digit)");
  }
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
  return S3ObjectUri{std::string(bucket), std::string(key)};
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

}  // namespace dnaserve::gateway
