#include "gateway/render/job_response.h"
#include "gateway/handlers/info_handlers.h"
#include "gateway/render/context_list.h"

#include "common/version.h"
#include "gateway/http/error_response.h"
#include "core/render/json_writer.h"
#include "gateway/openapi/openapi.h"
#include "core/render/predict_response.h"

namespace dnaserve::gateway {

RouteHandler MakeHealthHandler() {
  // The body never changes: rendered once, not per probe.
  core::JsonWriter w;
  w.StartObject();
  w.Field("status", "healthy");
  w.Field("version", ServiceVersion());
  w.EndObject();
  return [body = w.Take()](RouteCall, Responder respond) {
    HttpResponse response;
    response.body = body;
    respond(std::move(response));
  };
}

RouteHandler MakeOpenApiHandler(const GatewayServices& services) {
  const core::ModelCatalogue* catalogue = services.catalogue;
  return [catalogue](RouteCall, Responder respond) {
    HttpResponse response;
    response.body = BuildOpenApiDocument(*catalogue, ServiceVersion());
    respond(std::move(response));
  };
}

RouteHandler MakeDocsPageHandler(const GatewayServices& services, DocsPage page) {
  const DocsHandler* docs = services.docs;
  return [docs, page](RouteCall, Responder respond) {
    switch (page) {
      case DocsPage::kSwaggerUi:
        return respond(docs->Docs());
      case DocsPage::kRedoc:
        return respond(docs->Redoc());
      case DocsPage::kViewer:
        return respond(docs->Viewer());
    }
  };
}

RouteHandler MakeDocsAssetHandler(const GatewayServices& services) {
  const DocsHandler* docs = services.docs;
  return [docs](RouteCall call, Responder respond) {
    HttpResponse response = docs->Asset(call.request.path);
    if (response.status == 404) {
      response = ErrorResponse(NotFound("no such documentation asset"), call.request.request_id);
    }
    respond(std::move(response));
  };
}

RouteHandler MakeModelsHandler(const GatewayServices& services) {
  const core::ModelCatalogue* catalogue = services.catalogue;
  return [catalogue](RouteCall call, Responder respond) {
    auto task = TaskFromName(call.params["task"]);
    if (!task) {
      respond(ErrorResponse(NotFound("unknown task '" + call.params["task"] + "'"),
                            call.request.request_id));
      return;
    }
    if (!catalogue->Known(*task)) {
      respond(ErrorResponse(Status(ErrorCode::kServiceUnavailable,
                                   "the " + std::string(TaskName(*task)) +
                                       " workers have not reported their models yet")
                                .set_retry_after_seconds(5),
                            call.request.request_id));
      return;
    }
    HttpResponse response;
    response.body = RenderModelList(*task, catalogue->Models(*task));
    respond(std::move(response));
  };
}

RouteHandler MakeContextsHandler(const GatewayServices& services) {
  const core::ModelCatalogue* catalogue = services.catalogue;
  return [catalogue](RouteCall call, Responder respond) {
    if (!catalogue->Known(Task::kExpression)) {
      respond(ErrorResponse(Status(ErrorCode::kServiceUnavailable,
                                   "the expression workers have not reported their models yet")
                                .set_retry_after_seconds(5),
                            call.request.request_id));
      return;
    }
    HttpResponse response;
    response.body = RenderContextList(catalogue->Models(Task::kExpression));
    respond(std::move(response));
  };
}

RouteHandler MakeModelCardHandler(const GatewayServices& services) {
  return [services](RouteCall call, Responder respond) {
    const std::string request_id = call.request.request_id;
    auto task = services.catalogue->TaskOfModel(call.params["model"]);
    if (!task.ok()) return respond(ErrorResponse(task.status(), request_id));
    // The public name of the card; the worker knows the package's own file name.
    std::string file = call.params.count("file") ? call.params["file"] : "";
    if (file == kModelCardFileName) file.clear();
    auto fetch = [backend = services.backend, task = *task, model = call.params["model"], file,
                  request_id, respond]() {
      auto card = backend->GetModelCard(task, model, file);
      if (!card.ok()) return respond(ErrorResponse(card.status(), request_id));
      HttpResponse response;
      response.content_type = card->content_type();
      response.body = std::move(*card->mutable_content());
      response.SetHeader("X-Content-Type-Options", "nosniff");
      respond(std::move(response));
    };
    // A worker call blocks (up to the list deadline): off the HTTP threads, like predictions.
    if (services.executor == nullptr) return fetch();
    if (!services.executor->TrySubmit(fetch)) {
      respond(ErrorResponse(Status(ErrorCode::kServiceUnavailable, "the gateway is busy")
                                .set_retry_after_seconds(1),
                            request_id));
    }
  };
}

}  // namespace dnaserve::gateway
