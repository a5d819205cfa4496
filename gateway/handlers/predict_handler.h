// POST /v1/tasks/{task}/predict: admission (format, Prefer, body, model, sync caps), then a job
// that runs synchronously or in the background.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakePredictHandler(const GatewayServices& services);

// True when a Prefer header asks for respond-async (RFC 7240 tokens, case-insensitive).
bool PrefersRespondAsync(const std::optional<std::string>& prefer);

}  // namespace dnaserve::gateway
