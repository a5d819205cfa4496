#include "common/observability/admin_server.h"

#include <pistache/endpoint.h>
#include <pistache/http.h>

#include <cctype>

#include "common/log.h"

using namespace Pistache;

namespace dnaserve::observability {
namespace {

class AdminHandlerImpl : public Http::Handler {
 public:
  HTTP_PROTOTYPE(AdminHandlerImpl)

  explicit AdminHandlerImpl(std::shared_ptr<const std::map<std::string, AdminHandler>> routes)
      : routes_(std::move(routes)) {}

  void onRequest(const Http::Request& req, Http::ResponseWriter writer) override {
    AdminResponse response;
    auto it = routes_->find(req.resource());
    if (req.method() != Http::Method::Get && req.method() != Http::Method::Head) {
      response = {405, "text/plain; charset=utf-8", "only GET is served here\n"};
    } else if (it == routes_->end()) {
      response = {404, "text/plain; charset=utf-8", "not found\n"};
    } else {
      try {
        response = it->second();
      } catch (const std::exception& e) {
        // Handlers return values; this only guards against allocation failures and the like.
        log::Error("admin_handler_failed", {{"path", req.resource()}, {"what", e.what()}});
        response = {500, "text/plain; charset=utf-8", "internal error\n"};
      }
    }
    writer.headers().add<Http::Header::ContentType>(response.content_type);
    writer.send(static_cast<Http::Code>(response.status), response.body);
  }

 private:
  std::shared_ptr<const std::map<std::string, AdminHandler>> routes_;
};

}  // namespace

StatusOr<std::pair<std::string, int>> ParseListenAddress(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return BadRequest("listen address '" + listen + "' is not of the form address:port");
  }
  const std::string port_text = listen.substr(colon + 1);
  if (port_text.size() > 5) return BadRequest("port of '" + listen + "' is out of range");
  for (char c : port_text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return BadRequest("port of '" + listen + "' is not a number");
    }
  }
  const int port = std::stoi(port_text);
  if (port > 65535) return BadRequest("port of '" + listen + "' is out of range");
  return std::make_pair(listen.substr(0, colon), port);
}

struct AdminServer::Impl {
  std::string listen;
  std::shared_ptr<const std::map<std::string, AdminHandler>> routes;
  std::unique_ptr<Http::Endpoint> endpoint;
  int port = 0;
};

AdminServer::AdminServer(std::string listen, std::map<std::string, AdminHandler> routes)
    : impl_(std::make_unique<Impl>()) {
  impl_->listen = std::move(listen);
  impl_->routes = std::make_shared<const std::map<std::string, AdminHandler>>(std::move(routes));
}

AdminServer::~AdminServer() { Stop(); }

Status AdminServer::Start() {
  auto address = ParseListenAddress(impl_->listen);
  if (!address.ok()) return address.status();
  try {
    impl_->endpoint = std::make_unique<Http::Endpoint>(
        Address(address->first, Port(static_cast<uint16_t>(address->second))));
    // One thread is plenty for probes and scrapes; the short timeouts keep an idle or slow
    // connection from holding it.
    impl_->endpoint->init(Http::Endpoint::options()
                              .threads(1)
                              .flags(Tcp::Options::ReuseAddr)
                              .headerTimeout(std::chrono::seconds(5))
                              .bodyTimeout(std::chrono::seconds(5)));
    impl_->endpoint->setHandler(std::make_shared<AdminHandlerImpl>(impl_->routes));
    impl_->endpoint->serveThreaded();
    impl_->port = static_cast<uint16_t>(impl_->endpoint->getPort());
  } catch (const std::exception& e) {
    impl_->endpoint.reset();
    return Unavailable("cannot listen on " + impl_->listen + ": " + e.what());
  }
  return Status::Ok();
}

void AdminServer::Stop() {
  if (!impl_ || !impl_->endpoint) return;
  impl_->endpoint->shutdown();
  impl_->endpoint.reset();
}

int AdminServer::port() const { return impl_->port; }

}  // namespace dnaserve::observability
