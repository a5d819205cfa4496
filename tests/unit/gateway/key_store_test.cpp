// API keys: the keys file is validated entry by entry, Authorization headers map to the exact
// 401/403 causes of RFC 6750, keys are recognised only through their SHA-256, and new keys are
// well-formed and unbiased.
#include "gateway/auth/key_store.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/s3_grants.h"
#include "gateway/auth/key_entry_json.h"
#include "tests/support/test_env.h"

namespace dnaserve::gateway {
namespace {

const char* const kAcmeKey = "dns_acmeTestKey0123456789";
const char* const kOffKey = "dns_disabledTestKey987654";

std::string Entry(const std::string& hash, const std::string& client, bool enabled = true,
                  int rate = 60, int concurrency = 2) {
  return "{\"key_sha256\": \"" + hash + "\", \"client_id\": \"" + client +
         "\", \"enabled\": " + (enabled ? "true" : "false") +
         ", \"rate_per_minute\": " + std::to_string(rate) +
         ", \"max_concurrency\": " + std::to_string(concurrency) + "}";
}

std::string File(const std::string& entries) { return "{\"keys\": [" + entries + "]}"; }

KeyStore TestStore() {
  auto store = KeyStore::FromJson(File(Entry(Sha256Hex(kAcmeKey), "acme", true, 120, 3) + ", " +
                                       Entry(Sha256Hex(kOffKey), "gone", false)));
  REQUIRE(store.ok());
  return std::move(store).value();
}

TEST_CASE("Sha256Hex matches the FIPS 180-2 test vectors", "[auth]") {
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("a valid keys file loads with its quotas", "[auth]") {
  KeyStore store = TestStore();
  CHECK(store.size() == 2);
  AuthResult r = store.Authenticate(std::string("Bearer ") + kAcmeKey);
  REQUIRE(r.status.ok());
  CHECK(r.bearer_error.empty());
  CHECK(r.principal.client_id == "acme");
  CHECK(r.principal.rate_per_minute == 120);
  CHECK(r.principal.max_concurrency == 3);
}

TEST_CASE("enabled defaults to true and upper-case digests are accepted", "[auth]") {
  std::string upper = Sha256Hex(kAcmeKey);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto store = KeyStore::FromJson(File("{\"key_sha256\": \"" + upper +
                                       "\", \"client_id\": \"acme\", \"rate_per_minute\": 6, "
                                       "\"max_concurrency\": 1}"));
  REQUIRE(store.ok());
  CHECK(store->Authenticate(std::string("Bearer ") + kAcmeKey).status.ok());
}

TEST_CASE("an empty key list loads (and authenticates nobody)", "[auth]") {
  auto store = KeyStore::FromJson("{\"keys\": []}");
  REQUIRE(store.ok());
  CHECK(store->size() == 0);
  AuthResult r = store->Authenticate(std::string("Bearer ") + kAcmeKey);
  CHECK(r.status.code() == ErrorCode::kUnauthorized);
  CHECK(r.bearer_error == "invalid_token");
}

TEST_CASE("malformed keys files are refused with the entry and the problem named", "[auth]") {
  const std::string good = Sha256Hex(kAcmeKey);
  const std::string second = Sha256Hex(kOffKey);
  struct Case {
    std::string json;
    std::string expect;  // substring of the message
  };
  const std::map<std::string, Case> cases = {
      {"not JSON", {"{\"keys\": [", "invalid JSON"}},
      {"top level array", {"[]", "top level"}},
      {"keys missing", {"{}", "\"keys\" must be an array"}},
      {"keys not array", {"{\"keys\": {}}", "\"keys\" must be an array"}},
      {"entry not object", {File("42"), "keys[0] must be an object"}},
      {"short digest", {File(Entry("abc123", "acme")), "keys[0]: \"key_sha256\""}},
      {"non-hex digest", {File(Entry(std::string(64, 'g'), "acme")), "keys[0]: \"key_sha256\""}},
      {"digest missing",
       {File("{\"client_id\": \"a\", \"rate_per_minute\": 6, \"max_concurrency\": 1}"),
        "keys[0]: \"key_sha256\""}},
      {"empty client", {File(Entry(good, "")), "keys[0]: \"client_id\""}},
      {"second entry bad rate",
       {File(Entry(good, "acme") + "," + Entry(second, "b", true, 0)),
        "keys[1]: \"rate_per_minute\" must be between 1"}},
      {"negative concurrency",
       {File(Entry(good, "acme", true, 60, -1)), "keys[0]: \"max_concurrency\" must be between 1"}},
      {"zero concurrency",
       {File(Entry(good, "acme", true, 60, 0)), "keys[0]: \"max_concurrency\""}},
      {"rate not integer",
       {File("{\"key_sha256\": \"" + good +
             "\", \"client_id\": \"a\", \"rate_per_minute\": 6.5, \"max_concurrency\": 1}"),
        "keys[0]: \"rate_per_minute\" must be an integer"}},
      {"rate missing",
       {File("{\"key_sha256\": \"" + good + "\", \"client_id\": \"a\", \"max_concurrency\": 1}"),
        "keys[0]: missing \"rate_per_minute\""}},
      {"enabled not bool",
       {File("{\"key_sha256\": \"" + good +
             "\", \"client_id\": \"a\", \"enabled\": \"yes\", \"rate_per_minute\": 6, "
             "\"max_concurrency\": 1}"),
        "keys[0]: \"enabled\" must be true or false"}},
      {"unknown field",
       {File("{\"key_sha256\": \"" + good +
             "\", \"client_id\": \"a\", \"rate_per_minut\": 6, \"rate_per_minute\": 6, "
             "\"max_concurrency\": 1}"),
        "keys[0]: unknown field \"rate_per_minut\""}},
      {"duplicate digest",
       {File(Entry(good, "a") + "," + Entry(good, "b")), "keys[1]: the same key_sha256"}},
  };
  for (const auto& [name, c] : cases) {
    INFO(name);
    auto store = KeyStore::FromJson(c.json);
    REQUIRE_FALSE(store.ok());
    CHECK(store.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(store.status().message(), Catch::Contains(c.expect));
  }
}

TEST_CASE("LoadFile reads a file and names the path on errors", "[auth]") {
  std::string dir = testing::MakeTempDir("dnaserve-keys");
  std::string path = dir + "/keys.json";
  {
    std::ofstream out(path);
    out << File(Entry(Sha256Hex(kAcmeKey), "acme"));
  }
  auto store = KeyStore::LoadFile(path);
  REQUIRE(store.ok());
  CHECK(store->size() == 1);

  auto missing = KeyStore::LoadFile(dir + "/absent.json");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("absent.json"));

  {
    std::ofstream out(path, std::ios::trunc);
    out << File(Entry("nothex", "acme"));
  }
  auto bad = KeyStore::LoadFile(path);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains(path));
  CHECK_THAT(bad.status().message(), Catch::Contains("keys[0]"));
  std::remove(path.c_str());
}

TEST_CASE("missing or malformed Authorization headers are 401 invalid_request", "[auth]") {
  KeyStore store = TestStore();
  const std::string key = kAcmeKey;
  const std::vector<std::optional<std::string>> headers = {
      std::nullopt,
      std::string(""),
      std::string("   "),
      std::string("Bearer"),
      std::string("Bearer "),
      std::string("Bearer    "),
      std::string("Basic ") + key,
      std::string("Bearerx ") + key,
      std::string("Bearer\t") + key,
      key,
      std::string("Bearer ") + key + " extra",
      std::string("Bearer ") + key + ",x",
      std::string("Token ") + key,
  };
  for (const auto& h : headers) {
    INFO("header: " << (h ? "\"" + *h + "\"" : std::string("<absent>")));
    AuthResult r = store.Authenticate(h);
    CHECK(r.status.code() == ErrorCode::kUnauthorized);
    CHECK(r.bearer_error == "invalid_request");
    CHECK(r.status.message().find(key) == std::string::npos);
  }
}

TEST_CASE("the Bearer scheme is case-insensitive and tolerates extra spaces", "[auth]") {
  KeyStore store = TestStore();
  for (const std::string prefix :
       {"Bearer ", "bearer ", "BEARER ", "bEaReR ", "Bearer   ", "  Bearer "}) {
    INFO(prefix);
    AuthResult r = store.Authenticate(prefix + kAcmeKey + " ");
    REQUIRE(r.status.ok());
    CHECK(r.principal.client_id == "acme");
  }
}

TEST_CASE("an unknown key is 401 invalid_token and is not echoed", "[auth]") {
  KeyStore store = TestStore();
  for (const std::string key : {"dns_notRegistered123", "dns_acmeTestKey012345678",
                                "dns_acmeTestKey01234567890", "x", "abc==", "a+/b-._~"}) {
    INFO(key);
    AuthResult r = store.Authenticate("Bearer " + key);
    CHECK(r.status.code() == ErrorCode::kUnauthorized);
    CHECK(r.bearer_error == "invalid_token");
    CHECK(r.status.message().find(key) == std::string::npos);
    CHECK(r.principal.client_id.empty());
  }
  // The stored digest itself is not a key.
  AuthResult by_hash = store.Authenticate("Bearer " + Sha256Hex(kAcmeKey));
  CHECK(by_hash.bearer_error == "invalid_token");
}

TEST_CASE("a disabled key is 403 forbidden without a bearer error", "[auth]") {
  KeyStore store = TestStore();
  AuthResult r = store.Authenticate(std::string("Bearer ") + kOffKey);
  CHECK(r.status.code() == ErrorCode::kForbidden);
  CHECK(r.bearer_error.empty());
  CHECK(r.principal.client_id.empty());
  CHECK(r.status.message().find(kOffKey) == std::string::npos);
}

TEST_CASE("the last entry of many is found and a malformed stored digest never matches", "[auth]") {
  std::vector<KeyEntry> entries;
  for (int i = 0; i < 50; ++i) {
    KeyEntry e;
    e.key_sha256 = Sha256Hex("dns_key" + std::to_string(i));
    e.principal.client_id = "client" + std::to_string(i);
    entries.push_back(e);
  }
  KeyEntry broken;
  broken.key_sha256 = "short";
  broken.principal.client_id = "broken";
  entries.push_back(broken);
  KeyStore store(entries);
  AuthResult last = store.Authenticate("Bearer dns_key49");
  REQUIRE(last.status.ok());
  CHECK(last.principal.client_id == "client49");
  AuthResult first = store.Authenticate("Bearer dns_key0");
  REQUIRE(first.status.ok());
  CHECK(first.principal.client_id == "client0");
  CHECK(store.Authenticate("Bearer short").bearer_error == "invalid_token");
}

TEST_CASE("generated keys have the vendor prefix, 43 base62 characters and are distinct",
          "[auth]") {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    std::string key = GenerateApiKey();
    REQUIRE(key.size() == kKeyPrefix.size() + 43);
    REQUIRE(key.substr(0, kKeyPrefix.size()) == kKeyPrefix);
    for (char c : key.substr(kKeyPrefix.size())) {
      REQUIRE(std::isalnum(static_cast<unsigned char>(c)));
    }
    seen.insert(key);
  }
  CHECK(seen.size() == 200);
}

TEST_CASE("generated key characters are uniform over the 62 symbols", "[auth]") {
  // 4000 keys x 43 characters: each symbol expects ~2774 hits (sd ~52). Plain modulo over bytes
  // would give the first 8 symbols 25% more (~3470), far outside the +-12% band.
  std::map<char, int> counts;
  const int keys = 4000;
  for (int i = 0; i < keys; ++i) {
    std::string key = GenerateApiKey();
    for (char c : key.substr(kKeyPrefix.size())) ++counts[c];
  }
  REQUIRE(counts.size() == 62);
  const double expected = keys * 43.0 / 62.0;
  for (const auto& [c, n] : counts) {
    INFO("symbol " << c << " count " << n);
    CHECK(n > expected * 0.88);
    CHECK(n < expected * 1.12);
  }
}

TEST_CASE("a generated key authenticates through its printed entry", "[auth]") {
  std::string key = GenerateApiKey();
  KeyEntry entry;
  entry.key_sha256 = Sha256Hex(key);
  entry.principal.client_id = "acme \"quoted\"";
  entry.principal.rate_per_minute = 30;
  entry.principal.max_concurrency = 4;
  auto store = KeyStore::FromJson("{\"keys\": [" + KeyEntryJson(entry) + "]}");
  REQUIRE(store.ok());
  AuthResult r = store->Authenticate("Bearer " + key);
  REQUIRE(r.status.ok());
  CHECK(r.principal.client_id == "acme \"quoted\"");
  CHECK(r.principal.rate_per_minute == 30);
  CHECK(r.principal.max_concurrency == 4);

  entry.enabled = false;
  auto off = KeyStore::FromJson("{\"keys\": [" + KeyEntryJson(entry) + "]}");
  REQUIRE(off.ok());
  CHECK(off->Authenticate("Bearer " + key).status.code() == ErrorCode::kForbidden);
}

std::string WithGrants(const std::string& hash, const std::string& grants) {
  return "{\"key_sha256\": \"" + hash +
         "\", \"client_id\": \"acme\", \"rate_per_minute\": 60, \"max_concurrency\": 2" + grants +
         "}";
}

TEST_CASE("s3_read and s3_write grants load with the principal, none by default", "[auth][grants]") {
  auto store = KeyStore::FromJson(File(
      WithGrants(Sha256Hex(kAcmeKey),
                 ", \"s3_read\": [\"s3://acme-data/\", \"s3://shared-ref/grch37/\"], "
                 "\"s3_write\": [\"s3://acme-data/results/\"]") +
      ", " + Entry(Sha256Hex(kOffKey), "plain")));
  REQUIRE(store.ok());
  AuthResult r = store->Authenticate(std::string("Bearer ") + kAcmeKey);
  REQUIRE(r.status.ok());
  REQUIRE(r.principal.s3_read().size() == 2);
  CHECK(r.principal.s3_read()[0].ToString() == "s3://acme-data/");
  CHECK(r.principal.s3_read()[1].bucket == "shared-ref");
  CHECK(r.principal.s3_read()[1].prefix == "grch37/");
  REQUIRE(r.principal.s3_write().size() == 1);
  CHECK(r.principal.s3_write()[0].ToString() == "s3://acme-data/results/");
  AuthResult plain = store->Authenticate(std::string("Bearer ") + kOffKey);
  REQUIRE(plain.status.ok());
  CHECK(plain.principal.s3_read().empty());
  CHECK(plain.principal.s3_write().empty());
  CHECK_FALSE(S3GrantsCoverUri(plain.principal.s3_read(), "s3://acme-data/x.vcf"));
}

TEST_CASE("malformed grants stop the keys file from loading, naming entry, field and rule",
          "[auth][grants]") {
  const std::string hash = Sha256Hex(kAcmeKey);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {", \"s3_read\": \"s3://acme-data/\"", "\"s3_read\" must be a list"},
      {", \"s3_read\": [42]", "keys[0]: \"s3_read\"[0] must be a string"},
      {", \"s3_read\": [\"s3://acme-data/in\"]", "must end with '/'"},
      {", \"s3_read\": [\"s3://acme-data\"]", "must end with '/'"},
      {", \"s3_write\": [\"s3://ok-bucket/\", \"https://acme-data/\"]",
       "\"s3_write\"[1]: 'https://acme-data/' must have the form"},
      {", \"s3_read\": [\"s3://Acme-Data/\"]", "not a valid S3 bucket name"},
      {", \"s3_read\": [\"s3://acme-data/a/../b/\"]", "'..' path segment"},
      {", \"s3_read\": [\"s3://acme-data/a//b/\"]", "empty, '.' or '..'"},
      {", \"s3_read\": [\"s3://acme-data//\"]", "empty, '.' or '..'"},
      {", \"s3_read\": [\"s3://acme-data/a\\tb/\"]", "control character"},
      {", \"s3_reed\": [\"s3://acme-data/\"]", "unknown field \"s3_reed\""},
  };
  for (const auto& [grants, says] : cases) {
    CAPTURE(grants);
    auto store = KeyStore::FromJson(File(WithGrants(hash, grants)));
    REQUIRE_FALSE(store.ok());
    CHECK_THAT(store.status().message(), Catch::Contains("keys file:"));
    CHECK_THAT(store.status().message(), Catch::Contains(says));
  }
}

TEST_CASE("grants survive the entry dnaserve-keys prints", "[auth][grants]") {
  KeyEntry entry;
  entry.key_sha256 = Sha256Hex(kAcmeKey);
  entry.principal.client_id = "acme";
  auto grants = std::make_shared<S3Grants>();
  grants->read = {*ParseS3Grant("s3://acme-data/"), *ParseS3Grant("s3://ref-data/grch37/")};
  grants->write = {*ParseS3Grant("s3://acme-data/out/")};
  entry.principal.s3 = grants;
  auto store = KeyStore::FromJson("{\"keys\": [" + KeyEntryJson(entry) + "]}");
  REQUIRE(store.ok());
  AuthResult r = store->Authenticate(std::string("Bearer ") + kAcmeKey);
  REQUIRE(r.status.ok());
  CHECK(EncodeS3Grants(r.principal.s3_read()) == "s3://acme-data/\ns3://ref-data/grch37/");
  CHECK(EncodeS3Grants(r.principal.s3_write()) == "s3://acme-data/out/");
  // Without grants the entry has no s3_* fields at all (as before grants existed).
  entry.principal.s3.reset();
  CHECK(KeyEntryJson(entry).find("s3_") == std::string::npos);
}

}  // namespace
}  // namespace dnaserve::gateway
