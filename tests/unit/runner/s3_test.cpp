// The S3 client: the input URI rule and output name of the variant workflow, the error mapping,
// and real transfers against an S3-compatible server on loopback that checks SigV4 signatures
// (HEAD size and ETag, streamed GET and PUT of a large-ish object, wrong secret refused,
// missing objects and buckets, If-Match, size limit, header prefix, cancellation, timeouts).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/digest.h"
#include "common/s3_grants.h"
#include "runner/s3/s3_client.h"
#include "runner/s3/s3_errors.h"
#include "runner/s3/s3_uri.h"
#include "tests/support/s3_server.h"
#include "tests/support/test_env.h"
#include "tests/support/test_files.h"

namespace dnaserve::gateway {
namespace {

using testing::S3Server;

std::string Md5Hex(const std::string& data) { return HexDigest(DigestAlgorithm::kMd5, data); }

using testing::ReadFile;
using testing::WriteFile;

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

S3Server& SharedS3() {
  static std::string why;
  static std::optional<S3Server> server = S3Server::Start({"inputs", "other-bucket"}, &why);
  if (!server) FAIL(why);
  return *server;
}

s3::S3Config TestConfig(const S3Server& server) {
  s3::S3Config config;
  config.endpoint = server.endpoint();
  config.region = S3Server::kRegion;
  config.access_key_id = S3Server::kAccessKey;
  config.secret_access_key = S3Server::kSecretKey;
  config.path_style = true;
  return config;
}

std::unique_ptr<s3::S3Client> Client(const s3::S3Config& config) {
  auto client = s3::S3Client::Create(config);
  REQUIRE(client.ok());
  return std::move(*client);
}

void CheckNoSecrets(const Status& status) {
  CHECK(status.message().find(S3Server::kSecretKey) == std::string::npos);
  CHECK(status.message().find(S3Server::kAccessKey) == std::string::npos);
}

TEST_CASE("variant input URIs follow the spec's rule", "[s3]") {
  auto ok = s3::ParseVcfObjectUri("s3://my-bucket/cohort/sample.vcf.gz");
  REQUIRE(ok.ok());
  CHECK(ok->bucket == "my-bucket");
  CHECK(ok->key == "cohort/sample.vcf.gz");
  CHECK(ok->ToString() == "s3://my-bucket/cohort/sample.vcf.gz");
  for (const std::string good : {"s3://abc/x.vcf", "s3://a.b-c/d/e f+g.vcf.bgz", "s3://abc/%41.vcf",
                                 "s3://abc/dir/../x.vcf"}) {
    CAPTURE(good);
    CHECK(s3::ParseVcfObjectUri(good).ok());
  }
  CHECK(s3::ParseVcfObjectUri("s3://abc/%41.vcf")->key == "%41.vcf");  // never decoded

  struct Bad {
    std::string uri;
    std::string says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"s3://ab", "8-1,024"},
           {"s3://abc/" + std::string(1100, 'k') + ".vcf", "8-1,024"},
           {"https://abc/x.vcf", "s3://bucket/key"},
           {"s3:/abc/x.vcf", "s3://bucket/key"},
           {"s3://abc", "s3://bucket/key"},
           {"s3://abc/", "s3://bucket/key"},
           {"s3:///x.vcf.gz", "s3://bucket/key"},
           {"s3://abc/dir/", "prefix"},
           {"s3://abc/sample.vcf/", "prefix"},
           {"s3://abc/sample.txt", ".vcf, .vcf.gz or .vcf.bgz"},
           {"s3://abc/sample.vcf.zip", ".vcf, .vcf.gz or .vcf.bgz"},
           {"s3://abc/sample.VCF", ".vcf, .vcf.gz or .vcf.bgz"},
           {"s3://abc/.vcf", "empty"},
           {"s3://abc/dir/.vcf.gz", "empty"},
           {"s3://Upper_Case/x.vcf", "bucket name"},
           {"s3://ab/x.vcf", "bucket name"},
           {"s3://-abc/x.vcf", "bucket name"},
           {"s3://a..b/x.vcf", "bucket name"},
           {"s3://192.168.1.10/x.vcf", "bucket name"},
           {"s3://evil.com:8080/x.vcf", "bucket name"},
           {"s3://user@host/x.vcf", "bucket name"},
           {"s3://abc/line\nbreak.vcf", "control character"},
       }) {
    CAPTURE(bad.uri);
    auto parsed = s3::ParseVcfObjectUri(bad.uri);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == ErrorCode::kBadRequest);
    CHECK_THAT(parsed.status().message(), Catch::Contains(bad.says));
  }
}

TEST_CASE("the annotated copy is named after the input and the job, in the same prefix", "[s3]") {
  const std::string job = "0f1e2d3c-4b5a-4697-8877-665544332211";
  struct Case {
    std::string in, out;
  };
  for (const Case& c : std::vector<Case>{
           {"a/b/sample.vcf", "a/b/sample.annotated.0f1e2d3c.vcf.gz"},
           {"sample.vcf.gz", "sample.annotated.0f1e2d3c.vcf.gz"},
           {"x/cohort.v2.vcf.bgz", "x/cohort.v2.annotated.0f1e2d3c.vcf.gz"},
       }) {
    auto out = s3::AnnotatedOutputUri(s3::S3ObjectUri{"bkt", c.in}, job);
    REQUIRE(out.ok());
    CHECK(out->bucket == "bkt");
    CHECK(out->key == c.out);
  }
  CHECK_FALSE(s3::AnnotatedOutputUri(s3::S3ObjectUri{"bkt", "x.txt"}, job).ok());
  auto too_long = s3::AnnotatedOutputUri(s3::S3ObjectUri{"bkt", std::string(1010, 'k') + ".vcf"}, job);
  REQUIRE_FALSE(too_long.ok());
  CHECK_THAT(too_long.status().message(), Catch::Contains("1,024"));
}

TEST_CASE("S3 answers map to statuses a user can act on", "[s3]") {
  s3::S3ObjectUri obj{"bkt", "dir/s.vcf"};
  // Missing, in a missing bucket or refused: one answer per direction, the one an object outside
  // the caller's grants gets (so no answer tells existence apart).
  const std::string unreadable = S3ObjectUnreadable("s3://bkt/dir/s.vcf").message();
  for (auto [status, code] : std::vector<std::pair<long, std::string>>{
           {404, ""}, {404, "NoSuchKey"}, {404, "NoSuchBucket"}, {403, ""}, {403, "AccessDenied"}}) {
    CAPTURE(status, code);
    for (auto op : {s3::S3Operation::kHead, s3::S3Operation::kGet}) {
      auto refused = s3::S3HttpError(op, obj, status, code);
      CHECK(refused.code() == ErrorCode::kBadRequest);
      CHECK(refused.message() == unreadable);
    }
    auto denied_write = s3::S3HttpError(s3::S3Operation::kPut, obj, status, code);
    CHECK(denied_write.code() == ErrorCode::kBadRequest);
    CHECK(denied_write.message() == S3PrefixUnwritable("s3://bkt/dir/").message());
  }
  auto credentials = s3::S3HttpError(s3::S3Operation::kGet, obj, 403, "SignatureDoesNotMatch");
  CHECK(credentials.code() == ErrorCode::kInternal);
  CHECK_THAT(credentials.message(), Catch::Contains("operator"));
  CHECK(s3::S3HttpError(s3::S3Operation::kGet, obj, 412, "PreconditionFailed").code() ==
        ErrorCode::kBadRequest);
  auto busy = s3::S3HttpError(s3::S3Operation::kPut, obj, 503, "SlowDown");
  CHECK(busy.code() == ErrorCode::kServiceUnavailable);
  CHECK(busy.retry_after_seconds().has_value());
  CHECK(s3::S3HttpError(s3::S3Operation::kGet, obj, 301, "PermanentRedirect").code() ==
        ErrorCode::kBadRequest);
  CHECK(s3::S3TransportError(s3::S3Operation::kGet, obj, s3::S3TransportFailure::kUnreachable, "").code() ==
        ErrorCode::kServiceUnavailable);
  CHECK(s3::S3ErrorCode("<?xml?><Error><Code>NoSuchKey</Code><Message>x</Message></Error>") ==
        "NoSuchKey");
  CHECK(s3::S3ErrorCode("not xml").empty());
}

TEST_CASE("S3 configuration is checked and URLs stay on the configured endpoint", "[s3]") {
  s3::S3Config config;
  config.endpoint = "https://s3.eu-west-1.amazonaws.com";
  config.region = "eu-west-1";
  config.access_key_id = "AKID";
  config.secret_access_key = "secret";
  auto path_style = Client(config);
  CHECK(path_style->ObjectUrl({"bkt", "a b/c+d/ü/~x_y-z.vcf"}) ==
        "https://s3.eu-west-1.amazonaws.com/bkt/a%20b/c%2Bd/%C3%BC/~x_y-z.vcf");
  CHECK(path_style->ObjectUrl({"bkt", "a/../b.vcf"}) ==
        "https://s3.eu-west-1.amazonaws.com/bkt/a/../b.vcf");
  // '%' is a key's own character: sent as %25, so the store decodes it back to the literal key
  // the grants were matched against (an escaped "/" or ".." never turns into a separator).
  CHECK(path_style->ObjectUrl({"bkt", "alice/%2e%2e%2Fbob.vcf"}) ==
        "https://s3.eu-west-1.amazonaws.com/bkt/alice/%252e%252e%252Fbob.vcf");
  config.path_style = false;
  auto virtual_hosted = Client(config);
  CHECK(virtual_hosted->ObjectUrl({"bkt", "x?y#z.vcf"}) ==
        "https://bkt.s3.eu-west-1.amazonaws.com/x%3Fy%23z.vcf");
  config.endpoint = "http://minio.internal:9000";
  CHECK(Client(config)->ObjectUrl({"bkt", "k.vcf"}) == "http://bkt.minio.internal:9000/k.vcf");

  for (const std::string bad : {"ftp://host", "host:9000", "http://user:pw@host",
                                "http://host/path", "http://host?x=1", ""}) {
    CAPTURE(bad);
    config.endpoint = bad;
    auto client = s3::S3Client::Create(config);
    REQUIRE_FALSE(client.ok());
    CHECK(client.status().message().find("pw") == std::string::npos);
  }
  config.endpoint = "http://127.0.0.1:9000";
  CHECK_FALSE(s3::S3Client::Create(config).ok());  // virtual-hosted needs a DNS name
  config.path_style = true;
  CHECK(s3::S3Client::Create(config).ok());
  config.secret_access_key.clear();
  CHECK_FALSE(s3::S3Client::Create(config).ok());
}

TEST_CASE("HEAD and GET read size, ETag and bytes of a real object", "[s3]") {
  S3Server& server = SharedS3();
  const std::string body = "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  REQUIRE(server.PutObject("inputs", "dir/head.vcf", body) == 200);
  auto client = Client(TestConfig(server));

  auto head = client->HeadObject({"inputs", "dir/head.vcf"});
  REQUIRE(head.ok());
  CHECK(head->size == static_cast<int64_t>(body.size()));
  CHECK(head->etag == "\"" + Md5Hex(body) + "\"");

  std::string dir = testing::MakeTempDir("dnaserve-s3-get");
  auto got = client->GetObject({"inputs", "dir/head.vcf"}, dir + "/in.vcf");
  REQUIRE(got.ok());
  CHECK(ReadFile(dir + "/in.vcf") == body);
  CHECK(got->etag == head->etag);
  CHECK(got->size == head->size);

  // If-Match with the current ETag succeeds; a replaced object fails instead of mixing versions.
  s3::S3GetOptions same;
  same.if_match = head->etag;
  CHECK(client->GetObject({"inputs", "dir/head.vcf"}, dir + "/same.vcf", same).ok());
  REQUIRE(server.PutObject("inputs", "dir/head.vcf", body + "20\t1\t.\tA\tG\t.\t.\t.\n") == 200);
  auto replaced = client->GetObject({"inputs", "dir/head.vcf"}, dir + "/old.vcf", same);
  REQUIRE_FALSE(replaced.ok());
  CHECK(replaced.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(replaced.status().message(), Catch::Contains("replaced"));
  CHECK_FALSE(Exists(dir + "/old.vcf"));

  // The first bytes only (the pre-acceptance header sniff), with the whole size.
  s3::S3GetOptions prefix;
  prefix.prefix_bytes = 10;
  auto sniff = client->GetObject({"inputs", "dir/head.vcf"}, dir + "/prefix", prefix);
  REQUIRE(sniff.ok());
  CHECK(ReadFile(dir + "/prefix") == body.substr(0, 10));
  CHECK(sniff->size > static_cast<int64_t>(body.size()));
  // An empty object is found by its HEAD (the pre-acceptance check refuses it before any GET).
  REQUIRE(server.PutObject("inputs", "empty.vcf", "") == 200);
  auto empty_head = client->HeadObject({"inputs", "empty.vcf"});
  REQUIRE(empty_head.ok());
  CHECK(empty_head->size == 0);
}

TEST_CASE("missing objects, missing buckets and a wrong secret are clear errors", "[s3]") {
  S3Server& server = SharedS3();
  auto client = Client(TestConfig(server));
  std::string dir = testing::MakeTempDir("dnaserve-s3-missing");

  auto head = client->HeadObject({"inputs", "nope/missing.vcf"});
  REQUIRE_FALSE(head.ok());
  CHECK(head.status().code() == ErrorCode::kBadRequest);
  CHECK(head.status().message() == S3ObjectUnreadable("s3://inputs/nope/missing.vcf").message());

  auto get = client->GetObject({"inputs", "nope/missing.vcf"}, dir + "/m.vcf");
  REQUIRE_FALSE(get.ok());
  CHECK(get.status().code() == ErrorCode::kBadRequest);
  CHECK(get.status().message() == S3ObjectUnreadable("s3://inputs/nope/missing.vcf").message());
  CHECK_FALSE(Exists(dir + "/m.vcf"));  // no partial download left behind

  auto no_bucket = client->GetObject({"no-such-bucket", "x.vcf"}, dir + "/b.vcf");
  REQUIRE_FALSE(no_bucket.ok());
  CHECK(no_bucket.status().message() ==
        S3ObjectUnreadable("s3://no-such-bucket/x.vcf").message());

  REQUIRE(server.PutObject("inputs", "signed.vcf", "data") == 200);
  s3::S3Config wrong = TestConfig(server);
  wrong.secret_access_key = "not-the-secret";
  auto refused = Client(wrong)->HeadObject({"inputs", "signed.vcf"});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == ErrorCode::kBadRequest);  // HEAD carries no error code
  auto refused_get = Client(wrong)->GetObject({"inputs", "signed.vcf"}, dir + "/w.vcf");
  REQUIRE_FALSE(refused_get.ok());
  CHECK(refused_get.status().code() == ErrorCode::kInternal);
  CHECK_THAT(refused_get.status().message(), Catch::Contains("SignatureDoesNotMatch"));
  CheckNoSecrets(refused_get.status());
  CHECK_FALSE(Exists(dir + "/w.vcf"));
  // The right secret reads the same object: the refusal was the signature's.
  CHECK(client->GetObject({"inputs", "signed.vcf"}, dir + "/r.vcf").ok());

  s3::S3Config unknown_key = TestConfig(server);
  unknown_key.access_key_id = "AKIDUNKNOWN";
  auto unknown = Client(unknown_key)->GetObject({"inputs", "signed.vcf"}, dir + "/u.vcf");
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.status().message(), Catch::Contains("InvalidAccessKeyId"));
}

TEST_CASE("a large-ish object streams up and down intact, with progress and a size limit", "[s3]") {
  S3Server& server = SharedS3();
  auto client = Client(TestConfig(server));
  std::string dir = testing::MakeTempDir("dnaserve-s3-large");
  std::string data(24 << 20, '\0');
  std::mt19937_64 rng(42);
  for (auto& c : data) c = static_cast<char>(rng() & 0xff);
  WriteFile(dir + "/up.bin", data);

  std::atomic<int64_t> last_up{0};
  s3::S3PutOptions put_options;
  put_options.content_type = "application/gzip";
  put_options.control.on_progress = [&](int64_t done, int64_t) { last_up = done; };
  auto start = std::chrono::steady_clock::now();
  auto put = client->PutObject({"inputs", "big/sample.annotated.12345678.vcf.gz"}, dir + "/up.bin",
                               put_options);
  auto put_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  REQUIRE(put.ok());
  CHECK(put->etag == "\"" + Md5Hex(data) + "\"");
  CHECK(put->size == static_cast<int64_t>(data.size()));
  CHECK(last_up.load() == static_cast<int64_t>(data.size()));
  auto stored = server.StoredObject("inputs", "big/sample.annotated.12345678.vcf.gz");
  REQUIRE(stored.has_value());
  CHECK(*stored == data);

  int64_t previous = -1;
  bool monotonic = true;
  s3::S3GetOptions get_options;
  get_options.control.on_progress = [&](int64_t done, int64_t) {
    if (done < previous) monotonic = false;
    previous = done;
  };
  start = std::chrono::steady_clock::now();
  auto got = client->GetObject({"inputs", "big/sample.annotated.12345678.vcf.gz"},
                               dir + "/down.bin", get_options);
  auto get_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  REQUIRE(got.ok());
  CHECK(monotonic);
  CHECK(previous == static_cast<int64_t>(data.size()));
  CHECK(ReadFile(dir + "/down.bin") == data);
  WARN("24 MiB over loopback: PUT " << put_ms << " ms, GET " << get_ms << " ms");

  s3::S3GetOptions limited;
  limited.max_bytes = 1 << 20;
  auto too_big = client->GetObject({"inputs", "big/sample.annotated.12345678.vcf.gz"},
                                   dir + "/limited.bin", limited);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == ErrorCode::kBadRequest);
  CHECK_THAT(too_big.status().message(), Catch::Contains("larger than the limit"));
  CHECK_FALSE(Exists(dir + "/limited.bin"));

  std::atomic<bool> cancel{false};
  s3::S3GetOptions cancelled;
  cancelled.control.cancelled = &cancel;
  cancelled.control.on_progress = [&](int64_t done, int64_t) {
    if (done > 0) cancel = true;
  };
  auto stopped = client->GetObject({"inputs", "big/sample.annotated.12345678.vcf.gz"},
                                   dir + "/cancelled.bin", cancelled);
  REQUIRE_FALSE(stopped.ok());
  CHECK_THAT(stopped.status().message(), Catch::Contains("cancelled"));
  CHECK_FALSE(Exists(dir + "/cancelled.bin"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("PUT refuses a missing local file and a missing bucket", "[s3]") {
  S3Server& server = SharedS3();
  auto client = Client(TestConfig(server));
  std::string dir = testing::MakeTempDir("dnaserve-s3-put");
  auto no_file = client->PutObject({"inputs", "x.vcf.gz"}, dir + "/absent");
  REQUIRE_FALSE(no_file.ok());
  CHECK(no_file.status().code() == ErrorCode::kInternal);
  WriteFile(dir + "/out.vcf.gz", "bytes");
  auto no_bucket = client->PutObject({"absent-bucket", "x.vcf.gz"}, dir + "/out.vcf.gz");
  REQUIRE_FALSE(no_bucket.ok());
  CHECK(no_bucket.status().code() == ErrorCode::kBadRequest);
  CHECK(no_bucket.status().message() == S3PrefixUnwritable("s3://absent-bucket/").message());
  CHECK(server.CreateBucket("late-bucket") == 200);
  CHECK(client->PutObject({"late-bucket", "x.vcf.gz"}, dir + "/out.vcf.gz").ok());
}

TEST_CASE("an unreachable or silent object store fails within the timeouts", "[s3]") {
  s3::S3Config config;
  config.region = "us-east-1";
  config.access_key_id = "AKID";
  config.secret_access_key = "secret";
  config.endpoint = "http://127.0.0.1:" + std::to_string(testing::FreePort());
  auto down = Client(config)->HeadObject({"bkt", "x.vcf"});
  REQUIRE_FALSE(down.ok());
  CHECK(down.status().code() == ErrorCode::kServiceUnavailable);
  CHECK_THAT(down.status().message(), Catch::Contains("could not be reached"));

  // A socket that listens but never answers: the kernel completes the connect, nobody replies.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(listen(fd, 8) == 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  config.endpoint = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  config.request_timeout = std::chrono::milliseconds(700);
  config.stall_timeout = std::chrono::seconds(1);
  auto start = std::chrono::steady_clock::now();
  auto silent = Client(config)->HeadObject({"bkt", "x.vcf"});
  auto head_elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(silent.ok());
  CHECK(silent.status().code() == ErrorCode::kServiceUnavailable);
  CHECK_THAT(silent.status().message(), Catch::Contains("did not answer in time"));
  CHECK(head_elapsed < std::chrono::seconds(10));

  std::string dir = testing::MakeTempDir("dnaserve-s3-stall");
  start = std::chrono::steady_clock::now();
  auto stalled = Client(config)->GetObject({"bkt", "x.vcf"}, dir + "/x.vcf");
  auto get_elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(stalled.ok());
  CHECK_THAT(stalled.status().message(), Catch::Contains("did not answer in time"));
  CHECK(get_elapsed < std::chrono::seconds(15));
  close(fd);
}

}  // namespace
}  // namespace dnaserve::gateway
