#include "gateway/handlers/genomes_handler.h"

#include <rapidjson/document.h>

#include <utility>

#include "common/log.h"
#include "gateway/http/error_response.h"

namespace dnaserve::gateway {

RouteHandler MakeGenomesHandler(const GatewayServices& services) {
  const core::GenomeListing* listing = services.genomes;
  return [listing](RouteCall call, Responder respond) {
    if (listing == nullptr) {
      respond(ErrorResponse(Unavailable("this gateway has no genome listing"),
                            call.request.request_id));
      return;
    }
    auto published = listing->Read();
    if (!published.ok()) {
      respond(ErrorResponse(published.status(), call.request.request_id));
      return;
    }
    // The values are JSON objects the runners wrote; one that does not parse is left out
    // rather than break the whole answer.
    std::string body = "{\"data\":{\"assemblies\":[";
    bool first = true;
    for (const auto& [assembly, json] : *published) {
      rapidjson::Document doc;
      doc.Parse(json.data(), json.size());
      if (doc.HasParseError() || !doc.IsObject()) {
        log::Warn("genome_listing_unreadable", {{"assembly", assembly}});
        continue;
      }
      if (!first) body += ",";
      body += json;
      first = false;
    }
    body += "]}}";
    HttpResponse response;
    response.body = std::move(body);
    respond(std::move(response));
  };
}

}  // namespace dnaserve::gateway
