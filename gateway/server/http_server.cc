#include "gateway/server/http_server.h"

#include <pistache/endpoint.h>
#include <pistache/http.h>
#include <pistache/peer.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "common/ids.h"
#include "common/log.h"
#include "gateway/http/error_response.h"
#include "gateway/server/chunked_body.h"
#include "gateway/server/header_block.h"

using namespace Pistache;

// Pistache declares Http::Handler::onInput private, but we must see the raw bytes before its
// parser buffers them (to refuse an oversized body from its Content-Length alone). The override
// below does that and then hands the bytes to Pistache's own implementation, which we reach by
// its exported symbol: a direct, non-virtual call of the base-class member.
extern "C" void PistacheHttpHandlerOnInput(Http::Handler* self, const char* buffer, size_t len,
                                           const std::shared_ptr<Tcp::Peer>& peer)
    __asm__("_ZN8Pistache4Http7Handler7onInputEPKcmRKSt10shared_ptrINS_3Tcp4PeerEE");

namespace dnaserve::gateway {
namespace {

// Pistache only writes typed headers; this one carries any name/value pair.
class NamedHeader : public Http::Header::Header {
 public:
  NamedHeader(std::string name, std::string value)
      : name_(std::move(name)), value_(std::move(value)) {}
  const char* name() const override { return name_.c_str(); }
  void write(std::ostream& os) const override { os << value_; }
#ifdef SAFE_HEADER_CAST
  uint64_t hash() const override { return Http::Header::detail::hash(name_.c_str()); }
#endif

 private:
  std::string name_;
  std::string value_;
};

// ASCII only (header names are tokens), inline rather than the locale-aware std::tolower.
std::string ToLower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size() && HexValue(in[i + 1]) >= 0 && HexValue(in[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2])));
      i += 2;
    } else if (in[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(in[i]);
    }
  }
  return out;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// Bodies of at least this size are written in pieces by SendInPieces, not by ResponseWriter.
constexpr size_t kLargeBodyBytes = 1 << 20;
constexpr size_t kPieceBytes = 256 << 10;

// Whether Send writes `response` with SendInPieces. The connection's SendGate is held exactly
// for these (SendInPieces releases it), so the gate and Send must ask the same question.
bool WrittenInPieces(const HttpResponse& response) {
  return !response.stream && response.body.size() >= kLargeBodyBytes;
}

// A complete HTTP/1.1 response written straight to the socket, for refusals made before
// Pistache has parsed the request (so no ResponseWriter exists yet).
std::string RawErrorResponse(const Status& status) {
  std::string request_id = NewUuidV4();
  HttpResponse response = ErrorResponse(status, request_id);
  std::ostringstream os;
  os << "HTTP/1.1 " << response.status << ' ' << ReasonPhrase(response.status) << "\r\n"
     << "Content-Type: application/json\r\n"
     << "Content-Length: " << response.body.size() << "\r\n"
     << "X-Request-Id: " << request_id << "\r\n";
  for (const auto& [name, value] : response.headers) {
    if (name != "X-Request-Id" && name != "Content-Type") os << name << ": " << value << "\r\n";
  }
  os << "Connection: close\r\n\r\n"
     << response.body.str();
  return os.str();
}

// Keeps a connection's responses whole on the wire. A large body is written a piece at a time
// (SendInPieces), and a response to a later pipelined request, sent meanwhile, would land between
// two pieces: while one is being written, the connection's other sends wait, then go in order.
class SendGate {
 public:
  // Runs `send` now, or once the large body being written (and the sends queued before this
  // one) is out. A `large` send holds the gate until Release().
  void Run(bool large, std::function<void()> send) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (busy_) {
        waiting_.push_back({large, std::move(send)});
        return;
      }
      busy_ = large;
    }
    send();
  }

  // The large body is written (or failed): the waiting sends go, in order, until the next
  // large one, which holds the gate again.
  void Release() {
    for (;;) {
      Waiting next;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (waiting_.empty()) {
          busy_ = false;
          return;
        }
        next = std::move(waiting_.front());
        waiting_.pop_front();
        // busy_ stays set while the queue drains, so a new send cannot overtake these.
      }
      next.send();
      if (next.large) return;  // its own Release() goes on with the rest
    }
  }

 private:
  struct Waiting {
    bool large = false;
    std::function<void()> send;
  };
  std::mutex mu_;
  bool busy_ = false;
  std::deque<Waiting> waiting_;
};

// Per-connection ingress bookkeeping, stored on the Pistache peer.
// Request body bytes the server holds for requests still being received, across every
// connection (HttpServerOptions::max_buffered_body_bytes).
class BodyBudget {
 public:
  explicit BodyBudget(uint64_t limit) : limit_(limit) {}
  // Takes `bytes` more; false (taking nothing) when that would pass the limit.
  bool TryReserve(uint64_t bytes) {
    uint64_t used = used_.load();
    do {
      if (bytes > limit_ || used > limit_ - bytes) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes));
    return true;
  }
  void Release(uint64_t bytes) { used_.fetch_sub(bytes); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

struct IngressState {
  explicit IngressState(std::shared_ptr<BodyBudget> budget) : budget(std::move(budget)) {}
  ~IngressState() { ReleaseBody(); }
  IngressState(const IngressState&) = delete;
  IngressState& operator=(const IngressState&) = delete;

  // The current request's share of the server's body budget: what it announced (Content-Length
  // or chunk sizes so far), returned when the request has been handed over or the connection
  // closes.
  bool ReserveBody(uint64_t total) {
    if (total <= reserved) return true;
    if (!budget->TryReserve(total - reserved)) return false;
    reserved = total;
    return true;
  }
  void ReleaseBody() {
    budget->Release(reserved);
    reserved = 0;
  }

  std::shared_ptr<BodyBudget> budget;
  // Fired by onDisconnection; every request read from this connection holds it.
  std::shared_ptr<Cancellation> closed = std::make_shared<Cancellation>();
  std::shared_ptr<SendGate> send_gate = std::make_shared<SendGate>();
  uint64_t reserved = 0;
  std::string head;           // copy of the current request's bytes until its header block ends
  bool headers_done = false;
  uint64_t body_bytes = 0;    // raw body bytes passed on (chunk framing included)
  uint64_t body_remaining = 0;  // Content-Length bytes of the current request still to come
  bool refused = false;       // a refusal was sent; everything else on this connection is dropped
  // Set on the reactor thread once our refusal has left through the socket (or failed to).
  std::shared_ptr<std::atomic<bool>> refusal_written = std::make_shared<std::atomic<bool>>(false);
  // The current request's chunked framing, followed byte by byte (chunked_body.h).
  std::optional<ChunkedBodyReader> chunked;
  // What the scan of the current request's header block found, until onRequest takes it. Every
  // request is handed to Pistache on its own (pipelined requests are split at their ends), so
  // every request Pistache completes has been scanned; `forwarded_scanned` false would mean one
  // was not, and such a request is attributed to its socket peer.
  bool forwarded_scanned = false;
  std::optional<std::string> forwarded_for;
  int authorization_lines = 0;
  // The socket peer as text, and the client address it stands for without X-Forwarded-For.
  std::string peer_ip;
  std::string peer_client_ip;
};

constexpr const char* kIngressKey = "dnaserve.ingress";

// Shared by every clone of the handler (Pistache clones it per reactor thread).
struct ServerShared {
  HttpServerOptions options;
  RequestHandler handler;
  std::shared_ptr<BodyBudget> body_budget;
  std::mutex mu;
  std::condition_variable idle;
  int64_t in_flight = 0;
  std::atomic<bool> draining{false};

  void Enter() {
    std::lock_guard<std::mutex> lock(mu);
    ++in_flight;
  }
  void Leave() {
    std::lock_guard<std::mutex> lock(mu);
    if (--in_flight == 0) idle.notify_all();
  }
};

// The request being completed by the current onInput call on this thread (see onRequest).
thread_local IngressState* t_current_ingress = nullptr;

class GatewayHandler : public Http::Handler {
 public:
  HTTP_PROTOTYPE(GatewayHandler)

  explicit GatewayHandler(std::shared_ptr<ServerShared> shared) : shared_(std::move(shared)) {}

  void onInput(const char* buffer, size_t len, const std::shared_ptr<Tcp::Peer>& peer) override {
    IngressState* state = StateOf(peer);
    std::string_view input(buffer, len);
    // One request at a time: bytes after the end of a request start the next one, whose header
    // block must be scanned in turn (a loop, not recursion: a read may hold thousands of tiny
    // pipelined requests).
    do {
      if (state->refused) {
        // Drop the rest of a refused request; the client closes. Until our refusal is out (for a
        // request Pistache refused itself we cannot tell, so always), each read re-arms the
        // socket's write interest (an empty send): Pistache's reactor handles an event as input
        // when it also reports the socket writable, and its sockets are edge-triggered, so a
        // refusal queued while the client is still sending could otherwise wait forever once
        // the client stops to read it (scripts/reliability saw about one upload in a hundred
        // wait out its 30 s timeout).
        if (!state->refusal_written->load()) peer->send(RawBuffer("", 0), MSG_NOSIGNAL);
        return;
      }
      input.remove_prefix(Consume(input, peer, state));
    } while (!input.empty());
  }

  // Takes the start of `input` for the current request; returns how many bytes it took (all of
  // them unless the request ended inside `input`).
  size_t Consume(std::string_view input, const std::shared_ptr<Tcp::Peer>& peer,
                 IngressState* state) {
    const auto& opts = shared_->options;
    if (!state->headers_done) {
      // The header block is held back until it is complete, then handed to Pistache in one
      // piece: Pistache rescans an incomplete request line or header line from its start on
      // every read, so a block trickled a byte at a time would cost it quadratic CPU. (Its
      // header timeout runs from the connection's or the previous request's end, so slow
      // clients are still cut off: http_server_test checks it.)
      size_t searched_from = state->head.size() < 3 ? 0 : state->head.size() - 3;
      const size_t held_before = state->head.size();
      state->head.append(input.data(), input.size());
      const bool skipped = SkipEmptyLines(state->head);
      if (skipped) searched_from = 0;
      const size_t end = state->head.find("\r\n\r\n", searched_from);
      if (end == std::string::npos) {
        // A client ending its lines in bare LF would otherwise wait out the header timeout.
        const size_t from = skipped ? 0 : held_before;
        if (FindBareLf(std::string_view(state->head).substr(from),
                       from == 0 ? '\0' : state->head[from - 1]) != std::string_view::npos) {
          Refuse(peer, state,
                 Status(ErrorCode::kBadRequest,
                        "a line ends in a bare LF; HTTP/1.1 lines end in CRLF "
                        "(RFC 9112 2.2)"));
        } else if (state->head.size() > opts.max_header_bytes) {
          Refuse(peer, state, Status(ErrorCode::kBadRequest, "request headers are too large"));
        }
        return input.size();
      }
      // The block ends in this input (it did not end in an earlier one), so everything after
      // it is this input's too.
      const size_t block_end = end + 4;
      const size_t tail = state->head.size() - block_end;
      state->headers_done = true;
      HeaderBlockFacts facts = ScanHeaderBlock(std::string_view(state->head).substr(0, end + 2));
      state->forwarded_for = std::move(facts.forwarded_for);
      state->authorization_lines = facts.authorization_lines;
      state->forwarded_scanned = true;
      if (facts.malformed) {
        // RFC 9112 6.3: a request whose framing cannot be trusted is answered 400 and its
        // connection closed; the same for every other malformed head (a proxy in front may have
        // read it differently).
        Refuse(peer, state,
               Status(ErrorCode::kBadRequest, "malformed request: " + *facts.malformed));
        return input.size();
      }
      const auto declared = facts.content_length;
      if (declared && *declared > opts.max_body_bytes) {
        Refuse(peer, state, TooLarge());
        return input.size();
      }
      if (declared && !state->ReserveBody(*declared)) {
        Refuse(peer, state, BodyBudgetSpent());
        return input.size();
      }
      std::string held = std::move(state->head);
      state->head.clear();
      state->chunked.reset();
      if (facts.chunked) {
        // ScanHeaderBlock let through only chunked alone, without Content-Length.
        state->chunked.emplace(opts.max_body_bytes);
        state->body_bytes = tail;
        const std::string head = WithPlainChunkedLine(std::string_view(held).substr(0, block_end));
        const size_t used =
            ForwardChunks(head, std::string_view(held).substr(block_end), peer, state);
        return input.size() - (tail - used);
      }
      const uint64_t body = declared.value_or(0);
      const size_t take = static_cast<size_t>(std::min<uint64_t>(tail, body));
      state->body_bytes = take;
      state->body_remaining = body - take;
      held.resize(block_end + take);  // what follows belongs to the next request
      Forward(held.data(), held.size(), peer, state);
      return input.size() - (tail - take);
    }
    if (state->chunked) {
      state->body_bytes += input.size();
      return ForwardChunks("", input, peer, state);
    }
    if (state->body_remaining == 0) {
      // Pistache did not complete the request we handed it whole (it should have); start over.
      state->headers_done = false;
      return 0;
    }
    const size_t take =
        static_cast<size_t>(std::min<uint64_t>(input.size(), state->body_remaining));
    state->body_bytes += take;
    state->body_remaining -= take;
    Forward(input.data(), take, peer, state);
    return take;
  }

  // Pistache calls this when a read finds the connection closed (EOF or reset): the client is
  // gone and nothing sent on this connection can reach it any more.
  void onDisconnection(const std::shared_ptr<Tcp::Peer>& peer) override {
    if (auto data = peer->tryGetData(kIngressKey)) {
      static_cast<IngressState*>(data.get())->closed->Cancel();
    }
    Http::Handler::onDisconnection(peer);
  }

  void onRequest(const Http::Request& req, Http::ResponseWriter writer) override {
    // Pistache's idle sweep treats a connection whose parser is back at a request line, and
    // that it does not consider idle, as a client still sending headers: after header_timeout,
    // counted from this hand-over, it answers 408 and drops the connection, however long the
    // request's own answer legitimately takes (a 60 s sync call got an empty 408 at 30 s). The
    // request is complete, so the connection is idle until the next bytes arrive (Pistache
    // marks it busy again then); only keepalive_timeout applies to it meanwhile.
    if (auto peer = writer.peer()) peer->setIdle(true);
    std::optional<std::string> forwarded_for;
    bool forwarded_scanned = false;
    int authorization_lines = 0;
    if (t_current_ingress) {
      t_current_ingress->headers_done = false;  // next bytes start a request
      t_current_ingress->chunked.reset();
      t_current_ingress->ReleaseBody();  // Pistache hands the body over and lets its buffer go
      forwarded_scanned = std::exchange(t_current_ingress->forwarded_scanned, false);
      forwarded_for = std::move(t_current_ingress->forwarded_for);
      t_current_ingress->forwarded_for.reset();
      authorization_lines = std::exchange(t_current_ingress->authorization_lines, 0);
    }

    HttpRequest request;
    request.request_id = NewUuidV4();
    request.method = Http::methodString(req.method());
    request.path = req.resource();
    for (auto it = req.query().parameters_begin(); it != req.query().parameters_end(); ++it) {
      request.query[PercentDecode(it->first)] = PercentDecode(it->second);
    }
    for (const auto& [name, raw] : req.headers().rawList()) {
      request.headers[ToLower(name)] = raw.value();
    }
    request.repeated_authorization = authorization_lines > 1;
    const TrustedProxies& trusted = shared_->options.trusted_proxies;
    IngressState* ingress = t_current_ingress;
    if (ingress && ingress->peer_ip.empty()) {
      // A connection's peer does not change: its text and canonical form are made once.
      ingress->peer_ip = req.address().host();
      ingress->peer_client_ip = ClientAddress(ingress->peer_ip, std::nullopt, trusted);
    }
    request.peer_ip = ingress ? ingress->peer_ip : req.address().host();
    if (forwarded_scanned && forwarded_for) {
      request.client_ip = ClientAddress(request.peer_ip, forwarded_for, trusted);
    } else {
      request.client_ip =
          ingress ? ingress->peer_client_ip : ClientAddress(request.peer_ip, std::nullopt, trusted);
    }
    bool client_keeps_alive = !req.headers().tryGet<Http::Header::Connection>();

    std::shared_ptr<SendGate> gate;
    if (auto peer = writer.getPeer()) {
      request.connection_closed = StateOf(peer)->closed;
      gate = StateOf(peer)->send_gate;
    }

    // Everything the responder needs, in one allocation (this runs for every request).
    struct Pending {
      Pending(Http::ResponseWriter w, std::string id, bool keeps_alive,
              std::shared_ptr<SendGate> g)
          : writer(std::move(w)),
            request_id(std::move(id)),
            client_keeps_alive(keeps_alive),
            gate(std::move(g)) {}
      Http::ResponseWriter writer;
      std::string request_id;
      bool client_keeps_alive;
      std::shared_ptr<SendGate> gate;  // the connection's; null when it was already gone
      std::atomic<bool> answered{false};
    };
    auto pending =
        std::make_shared<Pending>(std::move(writer), request.request_id, client_keeps_alive, gate);
    auto shared = shared_;
    shared->Enter();
    Responder respond = [shared, pending](HttpResponse response) {
      if (pending->answered.exchange(true)) return;  // exactly once
      const bool large = WrittenInPieces(response);
      // The write completes on the reactor thread later; the response stays in flight until
      // then, or Stop() could shut the reactor down with the response still queued.
      auto send = [shared, pending, response = std::move(response)]() mutable {
        Send(pending->writer, std::move(response), pending->request_id,
             pending->client_keeps_alive, shared->draining, pending->gate)
            .then([shared](ssize_t) { shared->Leave(); },
                  [shared](std::exception_ptr) { shared->Leave(); });
      };
      if (pending->gate) {
        pending->gate->Run(large, std::move(send));
      } else {
        send();
      }
    };

    if (req.body().size() > shared_->options.max_body_bytes) {
      respond(ErrorResponse(TooLarge(), request.request_id));
      return;
    }
    request.body = req.body();
    shared_->handler(std::move(request), std::move(respond));
  }

 private:
  // Passes Pistache `prefix` (the header block, or nothing) and the chunk data found in `bytes`
  // re-framed as one whole chunk (chunked_body.h says why), ending the body when it ends;
  // malformed or oversized framing is refused instead. Returns how many of `bytes` belong to
  // this request: after the body's end the next request starts.
  size_t ForwardChunks(std::string_view prefix, std::string_view bytes,
                       const std::shared_ptr<Tcp::Peer>& peer, IngressState* state) {
    std::string data;
    const auto verdict = state->chunked->Feed(bytes, &data);
    switch (verdict) {
      case ChunkedBodyReader::Verdict::kMalformed:
        Refuse(peer, state, Status(ErrorCode::kBadRequest, "malformed chunked request body"));
        return bytes.size();
      case ChunkedBodyReader::Verdict::kTooLarge:
        Refuse(peer, state, TooLarge());
        return bytes.size();
      case ChunkedBodyReader::Verdict::kNeedMore:
      case ChunkedBodyReader::Verdict::kComplete:
        break;
    }
    if (!state->ReserveBody(state->chunked->body_bytes())) {
      Refuse(peer, state, BodyBudgetSpent());
      return bytes.size();
    }
    const size_t consumed = state->chunked->consumed();
    std::string framed(prefix);
    if (!data.empty()) {
      char size_line[24];
      std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
      framed.append(size_line).append(data).append("\r\n");
    }
    if (verdict == ChunkedBodyReader::Verdict::kComplete) framed.append("0\r\n\r\n");
    if (!framed.empty()) Forward(framed.data(), framed.size(), peer, state);
    if (verdict != ChunkedBodyReader::Verdict::kComplete) return bytes.size();
    // The request is complete (onRequest has reset the state): the rest is the next one.
    state->headers_done = false;
    state->chunked.reset();
    return std::min(consumed, bytes.size());
  }

  // RFC 9112 2.2: a server SHOULD ignore empty lines (CRLF) received before a request line (an
  // HTTP/1.0 client may send one after a POST body). Drops them from the front of `head`;
  // true when it dropped any.
  static bool SkipEmptyLines(std::string& head) {
    size_t skip = 0;
    while (head.compare(skip, 2, "\r\n") == 0) skip += 2;
    head.erase(0, skip);
    return skip > 0;
  }

  static Status BodyBudgetSpent() {
    return Status(ErrorCode::kServiceUnavailable,
                  "the gateway is receiving too many large request bodies at once; retry shortly")
        .set_retry_after_seconds(1);
  }

  static Status TooLarge() {
    return Status(ErrorCode::kPayloadTooLarge,
                  "request body exceeds the 16 MiB limit (16777216 bytes); it was not read");
  }

  IngressState* StateOf(const std::shared_ptr<Tcp::Peer>& peer) {
    auto data = peer->tryGetData(kIngressKey);
    if (!data) {
      data = std::make_shared<IngressState>(shared_->body_budget);
      peer->putData(kIngressKey, data);
    }
    return static_cast<IngressState*>(data.get());
  }

  void Forward(const char* buffer, size_t len, const std::shared_ptr<Tcp::Peer>& peer,
               IngressState* state) {
    t_current_ingress = state;
    PistacheHttpHandlerOnInput(this, buffer, len, peer);
    t_current_ingress = nullptr;
    // Pistache answers a request it cannot parse (a malformed chunk, a header it rejects) with
    // its own error and starts over, reading whatever follows as a new request line, which it
    // rescans from the start on every read: the rest of a 16 MiB body would cost minutes of
    // CPU, blocking this reactor thread (found by scripts/reliability's chunked-body attack).
    // Once the parser has given up on a request we are still passing a body to, the rest of the
    // connection's input is dropped.
    if (state->headers_done && !state->refused && ParserAbandonedRequest(peer)) {
      state->refused = true;
      state->head.clear();
      log::Warn("request_abandoned_by_parser", {{"peer", peer->address().host()}});
    }
  }

  static bool ParserAbandonedRequest(const std::shared_ptr<Tcp::Peer>& peer) {
    auto data = peer->tryGetData(Http::Handler::ParserData);
    if (!data) return false;
    auto* parser = static_cast<Http::RequestParser*>(data.get());
    return parser->step() != nullptr &&
           parser->step()->id() == Http::Private::RequestLineStep::Id;
  }

  // Answers `status` and closes the connection: once the answer is written, the server's side
  // is shut down (the client reads the answer, then end of stream), while what the client still
  // sends is read and dropped until it closes too (RFC 9112 9.6: closing both ways at once could
  // reset the connection before the client has read the answer).
  static void Refuse(const std::shared_ptr<Tcp::Peer>& peer, IngressState* state,
                     const Status& status) {
    state->refused = true;
    state->head.clear();
    std::string wire = RawErrorResponse(status);
    const size_t length = wire.size();
    auto written = state->refusal_written;
    std::weak_ptr<Tcp::Peer> weak_peer = peer;
    peer->send(RawBuffer(std::move(wire), length), MSG_NOSIGNAL)
        .then(
            [written, weak_peer](ssize_t) {
              written->store(true);
              // Runs on the reactor thread that owns the peer, so its descriptor is still this
              // connection's.
              if (auto p = weak_peer.lock()) ::shutdown(p->fd(), SHUT_WR);
            },
            [written](std::exception_ptr) { written->store(true); });
    log::Warn("request_refused_at_ingress",
              {{"peer", peer->address().host()}, {"code", ErrorCodeName(status.code())}});
  }

  // `gate` (may be null) is the connection's SendGate; a large body holds it until written.
  static Async::Promise<ssize_t> Send(Http::ResponseWriter& writer, HttpResponse response,
                                      const std::string& request_id, bool client_keeps_alive,
                                      bool draining, const std::shared_ptr<SendGate>& gate) {
    auto& headers = writer.headers();
    if (draining) {
      // Clients reconnect through the load balancer to a replica that is not going away.
      headers.remove<Http::Header::Connection>();
      headers.add<Http::Header::Connection>(Http::ConnectionControl::Close);
    } else if (client_keeps_alive) {
      // Pistache answers "Connection: Close" to requests without a Connection header, which
      // defeats HTTP/1.1 keep-alive; restore the protocol default.
      headers.remove<Http::Header::Connection>();
      headers.add<Http::Header::Connection>(Http::ConnectionControl::KeepAlive);
    }
    headers.add(std::make_shared<NamedHeader>("Content-Type", response.content_type));
    // A handler may name another id (an edge-assigned one, or a finished job's original).
    const std::string* id_override = response.FindHeader("X-Request-Id");
    headers.add(std::make_shared<NamedHeader>("X-Request-Id", id_override ? *id_override : request_id));
    for (const auto& [name, value] : response.headers) {
      if (name == "X-Request-Id" || name == "Content-Type") continue;
      headers.add(std::make_shared<NamedHeader>(name, value));
    }
    if (response.stream) return SendStream(writer, std::move(response));
    if (WrittenInPieces(response)) return SendInPieces(writer, std::move(response), gate);
    return writer.send(static_cast<Http::Code>(response.status), response.body);
  }

  // The status line and the headers ResponseWriter holds, as it would write them, then
  // `framing` (Content-Length or Transfer-Encoding): for responses written to the peer directly.
  static void SendHead(Tcp::Peer& peer, Http::ResponseWriter& writer, int status,
                       const std::string& framing) {
    std::ostringstream head;
    head << "HTTP/1.1 " << status << ' ' << Http::codeString(static_cast<Http::Code>(status))
         << "\r\n";
    for (const auto& header : writer.headers().list()) {
      head << header->name() << ": ";
      header->write(head);
      head << "\r\n";
    }
    head << framing << "\r\n\r\n";
    std::string first = head.str();
    const size_t length = first.size();
    peer.send(RawBuffer(std::move(first), length), MSG_NOSIGNAL);
  }

  // The status line and headers now, then each write to the stream as one chunk; the response
  // (and its in-flight count) ends when the stream closes.
  static Async::Promise<ssize_t> SendStream(Http::ResponseWriter& writer, HttpResponse response) {
    auto peer = writer.getPeer();
    if (!peer) return Async::Promise<ssize_t>::rejected(std::runtime_error("client gone"));
    SendHead(*peer, writer, response.status, "Transfer-Encoding: chunked");
    std::shared_ptr<ResponseStream> stream = std::move(response.stream);
    return Async::Promise<ssize_t>([peer, stream](Async::Resolver& resolve, Async::Rejection&) {
      auto done = std::make_shared<Async::Resolver>(std::move(resolve));
      stream->Attach(
          [peer](std::string data) {
            std::ostringstream size;
            size << std::hex << data.size() << "\r\n";
            std::string chunk = size.str() + data + "\r\n";
            const size_t n = chunk.size();
            peer->send(RawBuffer(std::move(chunk), n), MSG_NOSIGNAL);
          },
          [peer, done] {
            std::string last = "0\r\n\r\n";
            peer->send(RawBuffer(std::move(last), 5), MSG_NOSIGNAL);
            (*done)(ssize_t{0});
          });
    });
  }

  // A large body through ResponseWriter::send exists five times at once (our copy, Pistache's
  // stream buffer, its RawBuffer, the write lambda's capture, the queued BufferHolder): 55 MB of
  // peak RSS for an 11.5 MB chromatin result. Written here instead, as the status line and
  // headers ResponseWriter would write, then the body in kPieceBytes pieces, each queued on the
  // peer only once the one before it is written (PieceWriter): queuing them all at once would
  // copy the whole body into the queue, twice the body at the gateway's peak.
  static Async::Promise<ssize_t> SendInPieces(Http::ResponseWriter& writer, HttpResponse response,
                                              std::shared_ptr<SendGate> gate) {
    auto peer = writer.getPeer();
    if (!peer) {
      if (gate) gate->Release();
      return Async::Promise<ssize_t>::rejected(std::runtime_error("client gone"));
    }
    SendHead(*peer, writer, response.status,
             "Content-Length: " + std::to_string(response.body.size()));
    // The body's buffer by reference: a sync job's result is also read by the after-reply
    // store, and a copy here would double the gateway's peak for a large answer.
    auto pieces = std::make_shared<PieceWriter>(std::move(peer), std::move(response.body).Share(),
                                                std::move(gate));
    return Async::Promise<ssize_t>([pieces](Async::Resolver& resolve, Async::Rejection& reject) {
      pieces->Start(std::move(resolve), std::move(reject));
    });
  }

  // One large body on its way to the peer, a piece at a time: the body plus one piece (and
  // Pistache's transient copies of that piece) is all it holds. The peer's write queue keeps the
  // pieces after the head in order; each completion, on the reactor thread, queues the next. The
  // writer's reference to the body is dropped as soon as its last piece is copied out (the bytes
  // go then, or when their other owner, a sync job's after-reply store, is done with them). The
  // response's promise is settled exactly once: resolved by the last piece written, rejected by a
  // failed write or when the client leaves (see the destructor).
  class PieceWriter : public std::enable_shared_from_this<PieceWriter> {
   public:
    PieceWriter(std::shared_ptr<Tcp::Peer> peer, std::shared_ptr<const std::string> body,
                std::shared_ptr<SendGate> gate)
        : peer_(std::move(peer)), body_(std::move(body)), total_(body_->size()),
          gate_(std::move(gate)) {}
    PieceWriter(const PieceWriter&) = delete;
    PieceWriter& operator=(const PieceWriter&) = delete;

    // A client that closes its connection makes Pistache drop the writes still queued for it
    // without settling them (Transport::removePeer); the continuation of the dropped piece holds
    // the last reference to this writer. Unsettled, the response would stay in flight until the
    // server's drain timeout, so it is rejected here.
    ~PieceWriter() { Settle(false); }

    void Start(Async::Resolver resolve, Async::Rejection reject) {
      resolve_.emplace(std::move(resolve));
      reject_.emplace(std::move(reject));
      SendNext();
    }

   private:
    void SendNext() {
      const size_t length = std::min(kPieceBytes, total_ - offset_);
      std::string piece = body_->substr(offset_, length);
      offset_ += length;
      const bool last = offset_ == total_;
      if (last) body_.reset();  // every byte is in the pieces now
      auto self = shared_from_this();
      Write(std::move(piece), length)
          .then(
              [self, last](ssize_t) {
                if (last) {
                  self->Settle(true);
                } else {
                  self->SendNext();
                }
              },
              [self](std::exception_ptr) { self->Settle(false); });
    }

    // Pistache throws when the peer's socket is already closed; the next piece is queued on the
    // reactor thread, where an escaping exception would end the process: a rejection instead.
    Async::Promise<ssize_t> Write(std::string piece, size_t length) {
      try {
        return peer_->send(RawBuffer(std::move(piece), length), MSG_NOSIGNAL);
      } catch (const std::exception&) {
        return Async::Promise<ssize_t>::rejected(std::runtime_error("client gone"));
      }
    }

    // One piece is in flight at a time, so a writer's steps never run concurrently (they run on
    // the reactor thread, the first on the caller's): the flag needs no lock.
    void Settle(bool written) {
      if (settled_ || !resolve_) return;
      settled_ = true;
      if (written) {
        (*resolve_)(static_cast<ssize_t>(total_));
      } else {
        (*reject_)(std::runtime_error("response body not written: the client went away"));
      }
      if (gate_) gate_->Release();  // the connection's next responses may go now
    }

    std::shared_ptr<Tcp::Peer> peer_;
    std::shared_ptr<const std::string> body_;  // read only: it may be shared (ResponseBody)
    const size_t total_;
    std::shared_ptr<SendGate> gate_;
    size_t offset_ = 0;
    bool settled_ = false;
    std::optional<Async::Resolver> resolve_;
    std::optional<Async::Rejection> reject_;
  };

  std::shared_ptr<ServerShared> shared_;
};

}  // namespace

struct HttpServer::Impl {
  std::shared_ptr<ServerShared> shared = std::make_shared<ServerShared>();
  std::unique_ptr<Http::Endpoint> endpoint;
  int port = 0;
};

HttpServer::HttpServer(HttpServerOptions options, RequestHandler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->shared->options = std::move(options);
  impl_->shared->handler = std::move(handler);
  impl_->shared->body_budget =
      std::make_shared<BodyBudget>(impl_->shared->options.max_buffered_body_bytes);
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  const auto& opts = impl_->shared->options;
  try {
    Address address(opts.address, Port(static_cast<uint16_t>(opts.port)));
    impl_->endpoint = std::make_unique<Http::Endpoint>(address);
    // Pistache's own limit sits above ours so that our enveloped 413 always answers first.
    size_t pistache_limit = opts.max_body_bytes + opts.max_header_bytes + 128 * 1024;
    impl_->endpoint->init(Http::Endpoint::options()
                              .threads(opts.threads)
                              .flags(Tcp::Options::ReuseAddr)
                              .maxRequestSize(pistache_limit)
                              .headerTimeout(opts.header_timeout)
                              .bodyTimeout(opts.body_timeout)
                              .keepaliveTimeout(opts.keepalive_timeout));
    impl_->endpoint->setHandler(std::make_shared<GatewayHandler>(impl_->shared));
    impl_->endpoint->serveThreaded();
    impl_->port = static_cast<uint16_t>(impl_->endpoint->getPort());
  } catch (const std::exception& e) {
    impl_->endpoint.reset();
    return Unavailable(std::string("cannot listen on ") + opts.address + ":" +
                       std::to_string(opts.port) + ": " + e.what());
  }
  return Status::Ok();
}

void HttpServer::BeginDrain() { impl_->shared->draining = true; }

void HttpServer::Stop() {
  if (!impl_ || !impl_->endpoint) return;
  {
    // Pistache's shutdown drops responses still being computed; let them finish first.
    std::unique_lock<std::mutex> lock(impl_->shared->mu);
    impl_->shared->idle.wait_for(lock, impl_->shared->options.drain_timeout,
                                 [&] { return impl_->shared->in_flight == 0; });
  }
  impl_->endpoint->shutdown();
  impl_->endpoint.reset();
}

int HttpServer::port() const { return impl_->port; }

}  // namespace dnaserve::gateway
