#include "gateway/auth/key_store.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <cctype>
#include <set>
#include <utility>

#include "common/digest.h"
#include "common/file_text.h"

namespace dnaserve::gateway {
namespace {

constexpr size_t kDigestHexLength = 64;
// Sanity ceilings that catch typos (an extra digit or two) in the keys file.
constexpr int64_t kMaxRatePerMinute = 6'000'000;
constexpr int64_t kMaxConcurrency = 100'000;
constexpr size_t kMaxClientIdLength = 128;

Status ConfigError(const std::string& message) { return BadRequest("keys file: " + message); }

std::string EntryName(size_t index) { return "keys[" + std::to_string(index) + "]"; }

bool IsHexDigest(const std::string& s) {
  if (s.size() != kDigestHexLength) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string ToLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

StatusOr<int64_t> PositiveInt(const rapidjson::Value& entry, const char* field, int64_t max,
                              size_t index) {
  auto it = entry.FindMember(field);
  if (it == entry.MemberEnd()) {
    return ConfigError(EntryName(index) + ": missing \"" + field + "\"");
  }
  if (!it->value.IsInt64()) {
    return ConfigError(EntryName(index) + ": \"" + field + "\" must be an integer");
  }
  int64_t v = it->value.GetInt64();
  if (v < 1 || v > max) {
    return ConfigError(EntryName(index) + ": \"" + field + "\" must be between 1 and " +
                       std::to_string(max) + ", got " + std::to_string(v));
  }
  return v;
}

// An optional list of object-storage grants ("s3_read", "s3_write"); absent = none.
StatusOr<std::vector<S3Grant>> GrantList(const rapidjson::Value& entry, const char* field,
                                         size_t index) {
  std::vector<S3Grant> out;
  auto it = entry.FindMember(field);
  if (it == entry.MemberEnd()) return out;
  const std::string where = EntryName(index) + ": \"" + field + "\"";
  if (!it->value.IsArray()) {
    return ConfigError(where + " must be a list of \"s3://bucket/prefix/\" strings");
  }
  const auto& list = it->value.GetArray();
  for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
    const std::string item = where + "[" + std::to_string(i) + "]";
    if (!list[i].IsString()) return ConfigError(item + " must be a string");
    auto grant = ParseS3Grant(std::string_view(list[i].GetString(), list[i].GetStringLength()));
    if (!grant.ok()) return ConfigError(item + ": " + grant.status().message());
    out.push_back(std::move(grant).value());
  }
  return out;
}

StatusOr<KeyEntry> ParseEntry(const rapidjson::Value& entry, size_t index) {
  if (!entry.IsObject()) return ConfigError(EntryName(index) + " must be an object");
  static const std::set<std::string> kKnown = {"key_sha256",      "client_id",       "enabled",
                                               "rate_per_minute", "max_concurrency", "s3_read",
                                               "s3_write"};
  for (auto m = entry.MemberBegin(); m != entry.MemberEnd(); ++m) {
    std::string name(m->name.GetString(), m->name.GetStringLength());
    if (kKnown.count(name) == 0) {
      return ConfigError(EntryName(index) + ": unknown field \"" + name + "\"");
    }
  }
  KeyEntry out;

  auto hash = entry.FindMember("key_sha256");
  if (hash == entry.MemberEnd() || !hash->value.IsString()) {
    return ConfigError(EntryName(index) + ": \"key_sha256\" must be a string");
  }
  std::string digest(hash->value.GetString(), hash->value.GetStringLength());
  if (!IsHexDigest(digest)) {
    return ConfigError(EntryName(index) +
                       ": \"key_sha256\" must be 64 hex characters (the SHA-256 of the key, "
                       "as printed by dnaserve-keys)");
  }
  out.key_sha256 = ToLower(digest);

  auto client = entry.FindMember("client_id");
  if (client == entry.MemberEnd() || !client->value.IsString() ||
      client->value.GetStringLength() == 0) {
    return ConfigError(EntryName(index) + ": \"client_id\" must be a non-empty string");
  }
  if (client->value.GetStringLength() > kMaxClientIdLength) {
    return ConfigError(EntryName(index) + ": \"client_id\" is longer than " +
                       std::to_string(kMaxClientIdLength) + " characters");
  }
  out.principal.client_id.assign(client->value.GetString(), client->value.GetStringLength());

  auto rate = PositiveInt(entry, "rate_per_minute", kMaxRatePerMinute, index);
  if (!rate.ok()) return rate.status();
  out.principal.rate_per_minute = *rate;
  auto concurrency = PositiveInt(entry, "max_concurrency", kMaxConcurrency, index);
  if (!concurrency.ok()) return concurrency.status();
  out.principal.max_concurrency = *concurrency;

  auto enabled = entry.FindMember("enabled");
  if (enabled != entry.MemberEnd()) {
    if (!enabled->value.IsBool()) {
      return ConfigError(EntryName(index) + ": \"enabled\" must be true or false");
    }
    out.enabled = enabled->value.GetBool();
  }

  S3Grants grants;
  auto read = GrantList(entry, "s3_read", index);
  if (!read.ok()) return read.status();
  grants.read = std::move(read).value();
  auto write = GrantList(entry, "s3_write", index);
  if (!write.ok()) return write.status();
  grants.write = std::move(write).value();
  if (!grants.read.empty() || !grants.write.empty()) {
    out.principal.s3 = std::make_shared<const S3Grants>(std::move(grants));
  }
  return out;
}

AuthResult Unauthorized(std::string bearer_error, std::string message) {
  AuthResult result;
  result.status = Status(ErrorCode::kUnauthorized, std::move(message));
  result.bearer_error = std::move(bearer_error);
  return result;
}

bool IsOws(char c) { return c == ' ' || c == '\t'; }

// RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
bool IsB64Token(std::string_view token) {
  size_t i = 0;
  while (i < token.size()) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (!(std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' ||
          c == '/')) {
      break;
    }
    ++i;
  }
  if (i == 0) return false;
  while (i < token.size() && token[i] == '=') ++i;
  return i == token.size();
}

// The token of "Bearer <token>", or nullopt when the header is not of that form. The scheme is
// case-insensitive (RFC 7235); one or more spaces separate it from the token.
std::optional<std::string_view> BearerToken(std::string_view header) {
  while (!header.empty() && IsOws(header.front())) header.remove_prefix(1);
  while (!header.empty() && IsOws(header.back())) header.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view rest = header.substr(kScheme.size());
  if (rest.empty() || rest.front() != ' ') return std::nullopt;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!IsB64Token(rest)) return std::nullopt;
  return rest;
}

}  // namespace

StatusOr<KeyStore> KeyStore::FromJson(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    return ConfigError(std::string("invalid JSON at offset ") +
                       std::to_string(doc.GetErrorOffset()) + ": " +
                       rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject()) return ConfigError("the top level must be an object {\"keys\": [...]}");
  auto keys = doc.FindMember("keys");
  if (keys == doc.MemberEnd() || !keys->value.IsArray()) {
    return ConfigError("\"keys\" must be an array");
  }
  std::vector<KeyEntry> entries;
  std::set<std::string> seen;
  const auto& array = keys->value.GetArray();
  for (rapidjson::SizeType i = 0; i < array.Size(); ++i) {
    auto entry = ParseEntry(array[i], i);
    if (!entry.ok()) return entry.status();
    if (!seen.insert(entry->key_sha256).second) {
      return ConfigError(EntryName(i) + ": the same key_sha256 appears in an earlier entry");
    }
    entries.push_back(std::move(entry).value());
  }
  return KeyStore(std::move(entries));
}

StatusOr<KeyStore> KeyStore::LoadFile(const std::string& path) {
  std::string reason;
  auto content = ReadFileText(path, &reason);
  if (!content) {
    return Status(ErrorCode::kNotFound, "keys file " + path + ": cannot open (" + reason + ")");
  }
  auto store = FromJson(*content);
  if (!store.ok()) {
    return Status(store.status().code(), path + ": " + store.status().message());
  }
  return store;
}

KeyStore::KeyStore(std::vector<KeyEntry> entries) : entries_(std::move(entries)) {
  for (auto& entry : entries_) entry.key_sha256 = ToLower(entry.key_sha256);
}

AuthResult RepeatedAuthorization() {
  return Unauthorized("invalid_request",
                      "more than one Authorization header; send exactly one: Bearer <API key>");
}

AuthResult KeyStore::Authenticate(const std::optional<std::string>& authorization) const {
  if (!authorization.has_value()) {
    return Unauthorized("invalid_request",
                        "missing Authorization header; send Authorization: Bearer <API key>");
  }
  std::optional<std::string_view> token = BearerToken(*authorization);
  if (!token.has_value()) {
    return Unauthorized("invalid_request",
                        "malformed Authorization header; expected Bearer <API key>");
  }

  // Compare the digest with every entry, without stopping at a match, so the time taken does not
  // depend on where (or whether) the key is registered.
  const std::string presented = Sha256Hex(*token);
  size_t match = entries_.size();  // "none"
  for (size_t i = 0; i < entries_.size(); ++i) {
    const std::string& stored = entries_[i].key_sha256;
    // A malformed stored digest (only possible through the constructor) never matches, but is
    // still compared so the loop does the same work.
    const bool well_formed = stored.size() == presented.size();
    const std::string& against = well_formed ? stored : presented;
    const int differs = CRYPTO_memcmp(presented.data(), against.data(), presented.size());
    const size_t equal_mask =
        static_cast<size_t>(0) - static_cast<size_t>(differs == 0 && well_formed);
    match = (match & ~equal_mask) | (i & equal_mask);
  }
  if (match == entries_.size()) {
    return Unauthorized("invalid_token", "unknown API key");
  }
  const KeyEntry& entry = entries_[match];
  AuthResult result;
  if (!entry.enabled) {
    result.status = Status(ErrorCode::kForbidden, "this API key is disabled");
    return result;
  }
  result.principal = entry.principal;
  return result;
}

std::string Sha256Hex(std::string_view text) {
  // Empty if OpenSSL fails: never matches a stored 64-character digest.
  return HexDigest(DigestAlgorithm::kSha256, text);
}

std::string GenerateApiKey() {
  static constexpr char kAlphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  constexpr size_t kAlphabetSize = sizeof(kAlphabet) - 1;  // 62
  constexpr size_t kLength = 43;                           // 43 * log2(62) > 256 bits
  // Bytes at or above 248 (= 4 * 62) are discarded so every character is equally likely.
  constexpr unsigned kLimit = 256 - 256 % kAlphabetSize;
  std::string key(kKeyPrefix);
  unsigned char buffer[64];
  while (key.size() < kKeyPrefix.size() + kLength) {
    if (RAND_bytes(buffer, sizeof(buffer)) != 1) return std::string();
    for (unsigned char b : buffer) {
      if (b >= kLimit) continue;
      key.push_back(kAlphabet[b % kAlphabetSize]);
      if (key.size() == kKeyPrefix.size() + kLength) break;
    }
  }
  return key;
}

}  // namespace dnaserve::gateway
