// dnaserve-bare-http: the floor the gateway's edge is measured against (BENCHMARKS.md, "The
// edge's own cost"). A Pistache server with nothing of the gateway: the same reactor thread
// count, the keep-alive fix the gateway applies (Pistache otherwise answers "Connection: Close"
// to HTTP/1.1 requests without a Connection header), and GET /health answering the gateway's
// body. Everything else is 404. Runs until SIGINT or SIGTERM.
//
//   dnaserve-bare-http --port 8099 --threads 2
#include <pistache/endpoint.h>
#include <pistache/http.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace {

using namespace Pistache;

class BareHandler : public Http::Handler {
 public:
  HTTP_PROTOTYPE(BareHandler)

  void onRequest(const Http::Request& request, Http::ResponseWriter writer) override {
    if (!request.headers().tryGet<Http::Header::Connection>()) {
      writer.headers().remove<Http::Header::Connection>();
      writer.headers().add<Http::Header::Connection>(Http::ConnectionControl::KeepAlive);
    }
    if (request.method() == Http::Method::Get && request.resource() == "/health") {
      writer.headers().add<Http::Header::ContentType>(MIME(Application, Json));
      writer.send(Http::Code::Ok, "{\"status\":\"healthy\",\"version\":\"bare\"}");
      return;
    }
    writer.send(Http::Code::Not_Found, "{}");
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bare Pistache server answering GET /health (the edge benchmark's reference)"};
  int port = 8099;
  int threads = 2;
  std::string address = "127.0.0.1";
  app.add_option("--port", port, "port to listen on")->check(CLI::Range(1, 65535));
  app.add_option("--threads", threads, "reactor threads (the gateway's DNASERVE_HTTP_THREADS)")
      ->check(CLI::Range(1, 64));
  app.add_option("--address", address, "address to listen on");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Http::Endpoint endpoint(Address(address, Port(static_cast<uint16_t>(port))));
  endpoint.init(Http::Endpoint::options().threads(threads).flags(Tcp::Options::ReuseAddr));
  endpoint.setHandler(Http::make_handler<BareHandler>());
  endpoint.serveThreaded();
  std::fprintf(stderr, "dnaserve-bare-http listening on %s:%d with %d threads\n", address.c_str(),
               port, threads);
  int received = 0;
  sigwait(&signals, &received);
  endpoint.shutdown();
  return 0;
}
