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

}  // namespace dnaserve::gateway
