#include "runner/s3/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "common/digest.h"
#include "common/log.h"
#include "runner/s3/s3_errors.h"

namespace dnaserve::s3 {
namespace {

// The payload hash of a request without a body.
constexpr const char* kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// Error bodies are small XML documents; keep at most this much of one.
constexpr size_t kMaxErrorBody = 64 * 1024;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Strict RFC 3986 encoding of an S3 key: unreserved characters and '/' stay, every other byte
// becomes %XX. SigV4 signs the path as sent, and S3 canonicalises keys the same way.
std::string EncodeKey(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size() * 3);
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Base64(const unsigned char* data, int size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, size);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

struct FileDigests {
  std::string sha256_hex;
  std::string md5_base64;
  int64_t size = 0;
};

// SHA-256 (the signed payload hash) and MD5 (Content-MD5, verified by the store) in one pass.
std::optional<FileDigests> DigestFile(const std::string& path, std::string* error) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    *error = "cannot open it";
    return std::nullopt;
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sha(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md5(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!sha || !md5 || EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestInit_ex(md5.get(), EVP_md5(), nullptr) != 1) {
    *error = "digest initialisation failed";
    return std::nullopt;
  }
  FileDigests out;
  std::vector<unsigned char> buffer(1 << 20);
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
    if (EVP_DigestUpdate(sha.get(), buffer.data(), n) != 1 ||
        EVP_DigestUpdate(md5.get(), buffer.data(), n) != 1) {
      *error = "digest update failed";
      return std::nullopt;
    }
    out.size += static_cast<int64_t>(n);
  }
  if (std::ferror(file.get())) {
    *error = "read error";
    return std::nullopt;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(sha.get(), digest, &len) != 1) {
    *error = "digest failed";
    return std::nullopt;
  }
  out.sha256_hex = ToHex(digest, len);
  if (EVP_DigestFinal_ex(md5.get(), digest, &len) != 1) {
    *error = "digest failed";
    return std::nullopt;
  }
  out.md5_base64 = Base64(digest, static_cast<int>(len));
  return out;
}

// State shared with libcurl's callbacks during one request.
struct Exchange {
  CURL* curl = nullptr;
  std::FILE* sink = nullptr;    // GET body (2xx only)
  std::FILE* source = nullptr;  // PUT body
  std::string error_body;
  int64_t written = 0;
  int64_t max_bytes = -1;
  bool too_large = false;
  bool local_io_failed = false;
  const S3TransferControl* control = nullptr;
};

bool IsSuccess(long status) { return status >= 200 && status < 300; }

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &status);
  if (!IsSuccess(status) || ex->sink == nullptr) {
    if (ex->error_body.size() < kMaxErrorBody) {
      ex->error_body.append(data, std::min(n, kMaxErrorBody - ex->error_body.size()));
    }
    return n;
  }
  if (ex->max_bytes >= 0 && ex->written + static_cast<int64_t>(n) > ex->max_bytes) {
    ex->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  if (std::fwrite(data, 1, n, ex->sink) != n) {
    ex->local_io_failed = true;
    return 0;
  }
  ex->written += static_cast<int64_t>(n);
  return n;
}

size_t OnRead(char* buffer, size_t size, size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t n = std::fread(buffer, 1, size * count, ex->source);
  if (n == 0 && std::ferror(ex->source)) {
    ex->local_io_failed = true;
    return CURL_READFUNC_ABORT;
  }
  return n;
}

int OnProgress(void* user, curl_off_t dl_total, curl_off_t dl_now, curl_off_t ul_total,
               curl_off_t ul_now) {
  auto* ex = static_cast<Exchange*>(user);
  const S3TransferControl* control = ex->control;
  if (control == nullptr) return 0;
  if (control->cancelled && control->cancelled->load()) return 1;  // CURLE_ABORTED_BY_CALLBACK
  if (control->on_progress) {
    bool upload = ex->source != nullptr;
    int64_t total = upload ? ul_total : dl_total;
    control->on_progress(upload ? ul_now : dl_now, total > 0 ? total : -1);
  }
  return 0;
}

S3TransportFailure Classify(CURLcode rc, const Exchange& ex) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      return S3TransportFailure::kUnreachable;
    case CURLE_OPERATION_TIMEDOUT:
      return S3TransportFailure::kTimedOut;
    case CURLE_ABORTED_BY_CALLBACK:
      return S3TransportFailure::kCancelled;
    case CURLE_WRITE_ERROR:
      if (ex.too_large) return S3TransportFailure::kTooLarge;
      return S3TransportFailure::kLocalIo;
    case CURLE_READ_ERROR:
      return S3TransportFailure::kLocalIo;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return S3TransportFailure::kBroken;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return S3TransportFailure::kTls;
    default:
      return S3TransportFailure::kOther;
  }
}

std::string ResponseHeader(CURL* curl, const char* name) {
  curl_header* header = nullptr;
  if (curl_easy_header(curl, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK || !header) {
    return "";
  }
  return header->value ? header->value : "";
}

int64_t ParseSize(const std::string& text) {
  if (text.empty()) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Total size from "bytes 0-99/12345".
int64_t ContentRangeTotal(const std::string& content_range) {
  size_t slash = content_range.rfind('/');
  if (slash == std::string::npos) return -1;
  return ParseSize(content_range.substr(slash + 1));
}

std::string FormatBytes(int64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

S3Client::S3Client(S3Config config, Endpoint endpoint)
    : config_(std::move(config)),
      endpoint_(std::move(endpoint)),
      sigv4_provider_("aws:amz:" + config_.region + ":s3") {}

S3Client::~S3Client() = default;

StatusOr<std::unique_ptr<S3Client>> S3Client::Create(S3Config config) {
  GlobalInitOnce();
  if (config.region.empty()) return Internal("S3 configuration: region is empty");
  for (char c : config.region) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
      return Internal("S3 configuration: region '" + config.region + "' is not a region name");
    }
  }
  if (config.access_key_id.empty() || config.secret_access_key.empty()) {
    return Internal("S3 configuration: the access key id and secret access key are required");
  }
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (!url) return Internal("S3 configuration: out of memory");
  if (curl_url_set(url.get(), CURLUPART_URL, config.endpoint.c_str(), 0) != CURLUE_OK) {
    return Internal("S3 configuration: endpoint is not a URL (expected http[s]://host[:port])");
  }
  auto part = [&](CURLUPart which) -> std::optional<std::string> {
    char* value = nullptr;
    if (curl_url_get(url.get(), which, &value, 0) != CURLUE_OK || value == nullptr) {
      return std::nullopt;
    }
    std::string out(value);
    curl_free(value);
    return out;
  };
  Endpoint endpoint;
  endpoint.scheme = part(CURLUPART_SCHEME).value_or("");
  endpoint.host = part(CURLUPART_HOST).value_or("");
  endpoint.port = part(CURLUPART_PORT).value_or("");
  if (endpoint.scheme != "http" && endpoint.scheme != "https") {
    return Internal("S3 configuration: endpoint scheme must be http or https");
  }
  if (endpoint.host.empty() || part(CURLUPART_USER) || part(CURLUPART_QUERY) ||
      part(CURLUPART_FRAGMENT) || part(CURLUPART_PATH).value_or("/") != "/") {
    return Internal("S3 configuration: endpoint must be only scheme://host[:port]");
  }
  if (!config.path_style) {
    bool ip_literal = endpoint.host.front() == '[' ||
                      endpoint.host.find_first_not_of("0123456789.") == std::string::npos;
    if (ip_literal) {
      return Internal(
          "S3 configuration: virtual-hosted addressing needs a DNS name as the "
          "endpoint host; use path-style addressing with an IP address");
    }
  }
  return std::unique_ptr<S3Client>(new S3Client(std::move(config), std::move(endpoint)));
}

std::string S3Client::ObjectUrl(const S3ObjectUri& object) const {
  std::string authority = endpoint_.host + (endpoint_.port.empty() ? "" : ":" + endpoint_.port);
  if (config_.path_style) {
    return endpoint_.scheme + "://" + authority + "/" + object.bucket + "/" + EncodeKey(object.key);
  }
  return endpoint_.scheme + "://" + object.bucket + "." + authority + "/" + EncodeKey(object.key);
}

namespace {

// Options every request shares: signing, safety rails, timeouts and callbacks.
struct RequestSetup {
  const S3Config* config;
  const std::string* provider;
  std::string url;
  std::vector<std::string> headers;
  std::chrono::milliseconds total_timeout;
  bool stall_guard = false;
};

SlistPtr Configure(CURL* curl, const RequestSetup& setup, Exchange* ex) {
  const S3Config& config = *setup.config;
  curl_easy_setopt(curl, CURLOPT_URL, setup.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);  // a key "a/../b.vcf" is that key, not b.vcf
  curl_easy_setopt(curl, CURLOPT_PROXY, "");       // never a proxy from the environment
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, setup.provider->c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, config.access_key_id.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, config.secret_access_key.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(setup.total_timeout.count()));
  if (setup.stall_guard) {
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(config.stall_timeout.count()));
  }
  // libcurl 7.88 signs an "Expect:" suppression header it then does not send (curl issue
  // 11664), which breaks the signature. So the upload keeps curl's unsigned
  // "Expect: 100-continue" but never waits for the 100 answer: the body follows at once.
  curl_easy_setopt(curl, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, ex);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, ex);
  curl_slist* list = nullptr;
  for (const auto& h : setup.headers) list = curl_slist_append(list, h.c_str());
  if (!config.session_token.empty()) {
    list = curl_slist_append(list, ("x-amz-security-token: " + config.session_token).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  return SlistPtr(list);
}

// Runs the request; OK when the store answered 2xx (or 206 for a ranged GET).
Status Run(S3Operation op, const S3ObjectUri& object, CURL* curl, Exchange& ex, long* status) {
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    std::string detail = ex.too_large ? FormatBytes(ex.max_bytes) : curl_easy_strerror(rc);
    return S3TransportError(op, object, Classify(rc, ex), detail);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
  if (!IsSuccess(*status)) {
    const std::string code = S3ErrorCode(ex.error_body);
    // The client's answer does not say why (a missing object and a refused one look alike to
    // it); the operator's log does. No credentials, signature or endpoint in it.
    log::Info("s3_request_refused", {{"operation", op == S3Operation::kHead   ? "HEAD"
                                                   : op == S3Operation::kGet ? "GET"
                                                                             : "PUT"},
                                     {"bucket", object.bucket},
                                     {"http_status", static_cast<int64_t>(*status)},
                                     {"s3_code", code}});
    return S3HttpError(op, object, *status, code);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<S3ObjectInfo> S3Client::HeadObject(const S3ObjectUri& object) const {
  CurlPtr curl(curl_easy_init());
  if (!curl) return Internal("libcurl could not start a request");
  Exchange ex;
  ex.curl = curl.get();
  RequestSetup setup{&config_,
                     &sigv4_provider_,
                     ObjectUrl(object),
                     {std::string("x-amz-content-sha256: ") + kEmptySha256},
                     config_.request_timeout,
                     false};
  SlistPtr headers = Configure(curl.get(), setup, &ex);
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  long status = 0;
  DNASERVE_RETURN_IF_ERROR(Run(S3Operation::kHead, object, curl.get(), ex, &status));
  S3ObjectInfo info;
  info.etag = ResponseHeader(curl.get(), "ETag");
  info.size = ParseSize(ResponseHeader(curl.get(), "Content-Length"));
  if (info.size < 0) return Internal("the object store's HEAD answer had no Content-Length");
  return info;
}

StatusOr<S3ObjectInfo> S3Client::GetObject(const S3ObjectUri& object, const std::string& path,
                                           const S3GetOptions& options) const {
  CurlPtr curl(curl_easy_init());
  if (!curl) return Internal("libcurl could not start a request");
  FilePtr file(std::fopen(path.c_str(), "wb"));
  if (!file) {
    return S3TransportError(S3Operation::kGet, object, S3TransportFailure::kLocalIo,
                            "cannot create the download file");
  }
  Exchange ex;
  ex.curl = curl.get();
  ex.sink = file.get();
  ex.max_bytes = options.max_bytes;
  ex.control = &options.control;
  RequestSetup setup{&config_,
                     &sigv4_provider_,
                     ObjectUrl(object),
                     {std::string("x-amz-content-sha256: ") + kEmptySha256},
                     config_.transfer_timeout,
                     true};
  if (!options.if_match.empty()) setup.headers.push_back("If-Match: " + options.if_match);
  if (options.prefix_bytes >= 1) {
    setup.headers.push_back("Range: bytes=0-" + std::to_string(options.prefix_bytes - 1));
  }
  SlistPtr headers = Configure(curl.get(), setup, &ex);
  long status = 0;
  Status result = Run(S3Operation::kGet, object, curl.get(), ex, &status);
  S3ObjectInfo info;
  if (!result.ok() && options.prefix_bytes >= 1 && status == 416) {
    // A range over an empty object is "not satisfiable": the prefix of nothing is nothing.
    result = Status::Ok();
    info.size = 0;
  } else if (result.ok()) {
    info.size =
        status == 206 ? ContentRangeTotal(ResponseHeader(curl.get(), "Content-Range")) : ex.written;
  }
  if (result.ok() && std::fflush(file.get()) != 0) {
    result =
        S3TransportError(S3Operation::kGet, object, S3TransportFailure::kLocalIo, "write error");
  }
  file.reset();
  if (!result.ok()) {
    std::remove(path.c_str());
    return result;
  }
  info.etag = ResponseHeader(curl.get(), "ETag");
  return info;
}

StatusOr<S3ObjectInfo> S3Client::PutObject(const S3ObjectUri& object, const std::string& path,
                                           const S3PutOptions& options) const {
  std::string error;
  auto digests = DigestFile(path, &error);
  if (!digests) {
    return S3TransportError(S3Operation::kPut, object, S3TransportFailure::kLocalIo, error);
  }
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    return S3TransportError(S3Operation::kPut, object, S3TransportFailure::kLocalIo,
                            "cannot open it");
  }
  CurlPtr curl(curl_easy_init());
  if (!curl) return Internal("libcurl could not start a request");
  Exchange ex;
  ex.curl = curl.get();
  ex.source = file.get();
  ex.control = &options.control;
  RequestSetup setup{
      &config_,
      &sigv4_provider_,
      ObjectUrl(object),
      {"x-amz-content-sha256: " + digests->sha256_hex, "Content-MD5: " + digests->md5_base64,
       "Content-Type: " + options.content_type},
      config_.transfer_timeout,
      true};
  SlistPtr headers = Configure(curl.get(), setup, &ex);
  curl_easy_setopt(curl.get(), CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_READFUNCTION, OnRead);
  curl_easy_setopt(curl.get(), CURLOPT_READDATA, &ex);
  curl_easy_setopt(curl.get(), CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(digests->size));
  long status = 0;
  DNASERVE_RETURN_IF_ERROR(Run(S3Operation::kPut, object, curl.get(), ex, &status));
  S3ObjectInfo info;
  info.size = digests->size;
  info.etag = ResponseHeader(curl.get(), "ETag");
  return info;
}

}  // namespace dnaserve::s3
