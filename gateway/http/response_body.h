// The bytes of an HttpResponse: owned by the response, or shared with another owner.
//
// A synchronous job's answer is sent to the client and, after the reply, stored (gzipped) in
// Redis. Both need the same bytes, and for a large result (an 11.5 MB chromatin body) a second
// copy is most of the gateway's peak memory. So a response can share the job result's buffer
// instead of copying it: the client is written from, and the store reads, one buffer, freed when
// the last of the two is done (gateway/handlers/job_runner.cc, the server's PieceWriter).
//
// Shared bytes are immutable (a `const std::string`): the other owner may be reading them on
// another thread while the response is written. Owned bytes behave as a plain string member did
// (a copy of the response copies them); they become shared only when the server hands a large
// body to its piece writer (`Share`), which moves them, never copies.
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace dnaserve::gateway {

class ResponseBody {
 public:
  ResponseBody() = default;
  // Implicit on purpose: `response.body = SomeRenderer(...)` reads as assigning a string.
  ResponseBody(std::string bytes) : owned_(std::move(bytes)) {}  // NOLINT(runtime/explicit)
  ResponseBody(const char* bytes) : owned_(bytes) {}             // NOLINT(runtime/explicit)

  // A body that is `bytes`, shared with whoever else holds them (not copied). Null reads as
  // empty.
  static ResponseBody Shared(std::shared_ptr<const std::string> bytes) {
    ResponseBody body;
    body.shared_ = std::move(bytes);
    return body;
  }

  const std::string& str() const { return shared_ ? *shared_ : owned_; }
  // For readers that take a string (rapidjson's Parse, Pistache's send, comparisons).
  operator const std::string&() const { return str(); }  // NOLINT(runtime/explicit)
  // The string reads the handlers, MCP's tool results and the tests make of a body.
  std::string_view view() const { return str(); }
  size_t size() const { return str().size(); }
  bool empty() const { return str().empty(); }
  const char* data() const { return str().data(); }
  const char* c_str() const { return str().c_str(); }
  size_t find(std::string_view what, size_t from = 0) const { return view().find(what, from); }
  std::string substr(size_t from, size_t count = std::string::npos) const {
    return str().substr(from, count);
  }

  // Whether the bytes are shared with another owner (not a copy of theirs).
  bool shared() const { return shared_ != nullptr; }
  // The bytes as a shared buffer, for a writer that outlives the response: shared bytes by
  // reference, owned ones moved into a new buffer. The body is left empty.
  std::shared_ptr<const std::string> Share() && {
    std::shared_ptr<const std::string> out = std::move(shared_);
    if (!out) out = std::make_shared<const std::string>(std::move(owned_));
    shared_.reset();
    owned_.clear();
    return out;
  }

  // Compared by bytes. One overload per kind of operand, so that none needs a conversion that
  // another could match too.
  friend bool operator==(const ResponseBody& a, const ResponseBody& b) {
    return a.view() == b.view();
  }
  friend bool operator==(const ResponseBody& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const ResponseBody& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const ResponseBody& a, const char* b) { return a.view() == b; }
  friend bool operator==(std::string_view a, const ResponseBody& b) { return b == a; }
  friend bool operator==(const std::string& a, const ResponseBody& b) { return b == a; }
  friend bool operator==(const char* a, const ResponseBody& b) { return b == a; }
  friend bool operator!=(const ResponseBody& a, const ResponseBody& b) { return !(a == b); }
  friend bool operator!=(const ResponseBody& a, std::string_view b) { return !(a == b); }
  friend bool operator!=(const ResponseBody& a, const std::string& b) { return !(a == b); }
  friend bool operator!=(const ResponseBody& a, const char* b) { return !(a == b); }
  friend bool operator!=(std::string_view a, const ResponseBody& b) { return !(b == a); }
  friend bool operator!=(const std::string& a, const ResponseBody& b) { return !(b == a); }
  friend bool operator!=(const char* a, const ResponseBody& b) { return !(b == a); }
  friend std::ostream& operator<<(std::ostream& os, const ResponseBody& b) {
    return os << b.view();
  }

 private:
  std::string owned_;                          // used when shared_ is null
  std::shared_ptr<const std::string> shared_;  // set: the body is these bytes, owned_ is unused
};

}  // namespace dnaserve::gateway
