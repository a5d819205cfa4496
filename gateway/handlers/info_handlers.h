// Read-only public routes: health, the OpenAPI document, the docs pages and the models list.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

enum class DocsPage { kSwaggerUi, kRedoc, kViewer };

RouteHandler MakeHealthHandler();
RouteHandler MakeOpenApiHandler(const GatewayServices& services);
RouteHandler MakeDocsPageHandler(const GatewayServices& services, DocsPage page);
RouteHandler MakeDocsAssetHandler(const GatewayServices& services);
RouteHandler MakeModelsHandler(const GatewayServices& services);
// GET /v1/tasks/expression/contexts: the expression models' training contexts with their
// ontology terms (gateway/render/context_list.h).
RouteHandler MakeContextsHandler(const GatewayServices& services);
// GET /v1/models/{model}/card and /v1/models/{model}/card/{file}: the model's MODEL_CARD.md
// (text/markdown; also as {file} "MODEL_CARD.md", so the card's relative image links resolve)
// and the PNGs it embeds (image/png), fetched from a worker of the model's task.
RouteHandler MakeModelCardHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
