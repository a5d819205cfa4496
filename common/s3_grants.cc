#include "common/s3_grants.h"

#include <cctype>

namespace dnaserve {
namespace {

constexpr std::string_view kScheme = "s3://";

bool LowerOrDigit(char c) {
  return std::islower(static_cast<unsigned char>(c)) ||
         std::isdigit(static_cast<unsigned char>(c));
}

bool HasControlCharacter(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Whether one '/'-separated segment of `key` is "." or "..".
bool HasDotSegment(std::string_view key) {
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view segment = key.substr(start, end - start);
    if (segment == "." || segment == "..") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool IsValidS3BucketName(std::string_view name) {
  if (name.size() < 3 || name.size() > 63) return false;
  if (!LowerOrDigit(name.front()) || !LowerOrDigit(name.back())) return false;
  bool all_digits_and_dots = true;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!LowerOrDigit(c) && c != '.' && c != '-') return false;
    if (c == '.' && i + 1 < name.size() && (name[i + 1] == '.' || name[i + 1] == '-')) return false;
    if (c == '-' && i + 1 < name.size() && name[i + 1] == '.') return false;
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') all_digits_and_dots = false;
  }
  return !all_digits_and_dots;  // an IP-address-like name is not a bucket
}

StatusOr<S3UriParts> SplitS3Uri(std::string_view uri) {
  if (uri.substr(0, kScheme.size()) != kScheme) {
    return BadRequest("input.uri must have the form s3://bucket/key");
  }
  const std::string_view rest = uri.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return BadRequest(
        "input.uri must have the form s3://bucket/key (bucket and key both "
        "non-empty)");
  }
  const std::string_view bucket = rest.substr(0, slash);
  if (!IsValidS3BucketName(bucket)) {
    return BadRequest("input.uri: '" + std::string(bucket) +
                      "' is not a valid S3 bucket name (3-63 characters: lower-case letters, "
                      "digits, '.' and '-', starting and ending with a letter or digit)");
  }
  return S3UriParts{std::string(bucket), std::string(rest.substr(slash + 1))};
}

StatusOr<S3Grant> ParseS3Grant(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return BadRequest(quoted + " must have the form s3://bucket/ or s3://bucket/prefix/");
  }
  if (HasControlCharacter(text)) return BadRequest(quoted + " contains a control character");
  const std::string_view rest = text.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return BadRequest(quoted + " must end with '/' (s3://bucket/ grants the whole bucket)");
  }
  const std::string_view bucket = rest.substr(0, slash);
  const std::string_view prefix = rest.substr(slash + 1);
  if (!IsValidS3BucketName(bucket)) {
    return BadRequest(quoted + ": '" + std::string(bucket) +
                      "' is not a valid S3 bucket name (3-63 characters: lower-case letters, "
                      "digits, '.' and '-', starting and ending with a letter or digit)");
  }
  if (!prefix.empty()) {
    if (prefix.back() != '/') {
      return BadRequest(quoted +
                        " must end with '/': a grant covers whole path segments, so "
                        "s3://bucket/alice/ grants alice/... but not alice-other/...");
    }
    // Every segment non-empty and neither "." nor "..": keys are literal, and such a grant
    // would not mean what it seems to.
    const std::string_view inner = prefix.substr(0, prefix.size() - 1);
    size_t start = 0;
    while (start <= inner.size()) {
      size_t end = inner.find('/', start);
      if (end == std::string_view::npos) end = inner.size();
      const std::string_view segment = inner.substr(start, end - start);
      if (segment.empty() || segment == "." || segment == "..") {
        return BadRequest(quoted +
                          " has an empty, '.' or '..' path segment; S3 keys are literal, so "
                          "write the prefix exactly as the objects' keys begin");
      }
      start = end + 1;
    }
  }
  return S3Grant{std::string(bucket), std::string(prefix)};
}

bool S3GrantsCover(const std::vector<S3Grant>& grants, std::string_view bucket,
                   std::string_view key) {
  if (key.empty() || HasDotSegment(key)) return false;
  for (const S3Grant& grant : grants) {
    if (grant.bucket == bucket && key.substr(0, grant.prefix.size()) == grant.prefix) return true;
  }
  return false;
}

bool S3GrantsCoverUri(const std::vector<S3Grant>& grants, std::string_view uri) {
  auto parts = SplitS3Uri(uri);
  return parts.ok() && S3GrantsCover(grants, parts->bucket, parts->key);
}

bool S3GrantsCoverPrefix(const std::vector<S3Grant>& grants, std::string_view prefix_uri) {
  if (prefix_uri.substr(0, kScheme.size()) != kScheme) return false;
  const std::string_view rest = prefix_uri.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view dir = rest.substr(slash + 1);
  if (!dir.empty() && dir.back() != '/') return false;
  // A name without '/' appended to `dir` is covered exactly when `dir` itself starts with the
  // grant's prefix (which is empty or ends with '/'). "x" stands for that name.
  return S3GrantsCover(grants, rest.substr(0, slash), std::string(dir) + "x");
}

std::string S3ParentPrefix(std::string_view uri) {
  auto parts = SplitS3Uri(uri);
  if (!parts.ok()) return std::string(uri);
  const size_t slash = parts->key.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : parts->key.substr(0, slash + 1);
  return "s3://" + parts->bucket + "/" + dir;
}

Status S3ObjectUnreadable(std::string_view uri) {
  return BadRequest("cannot read " + std::string(uri) +
                    ": the object does not exist or may not be read with this API key; check "
                    "the bucket and key, and that the key's s3_read grants cover them");
}

Status S3PrefixUnwritable(std::string_view prefix) {
  return BadRequest("cannot write the annotated VCF into " + std::string(prefix) +
                    ": the bucket does not exist or that prefix may not be written with this API "
                    "key; the output is written beside the input, so the key's s3_write grants "
                    "must cover the input's prefix");
}

std::string EncodeS3Grants(const std::vector<S3Grant>& grants) {
  std::string out;
  for (const S3Grant& grant : grants) {
    if (!out.empty()) out += '\n';
    out += grant.ToString();
  }
  return out;
}

std::vector<S3Grant> DecodeS3Grants(std::string_view text) {
  std::vector<S3Grant> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    auto grant = ParseS3Grant(text.substr(start, end - start));
    if (grant.ok()) out.push_back(std::move(grant).value());
    start = end + 1;
  }
  return out;
}

}  // namespace dnaserve
