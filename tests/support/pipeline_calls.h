// The gateway's request pipeline driven in process, as the pipeline, MCP and variant-route unit
// tests do (no HTTP server): hand it a request, wait for the response it hands back.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "gateway/auth/key_store.h"
#include "gateway/http/http_types.h"
#include "gateway/http/routes.h"

namespace dnaserve::testing {

// Starts `request` through `pipeline`; the future holds the response the pipeline hands back.
std::future<gateway::HttpResponse> StartPipelineCall(const gateway::RequestPipeline& pipeline,
                                                     gateway::HttpRequest request);

// StartPipelineCall, then waits for the response; a Catch2 REQUIRE fails when none comes within
// `timeout` (a hang is a failure, never a stuck test run).
gateway::HttpResponse CallPipeline(const gateway::RequestPipeline& pipeline,
                                   gateway::HttpRequest request,
                                   std::chrono::seconds timeout = std::chrono::seconds(10));

// The key store of a keys file with these entries (testing::KeyEntry); REQUIREs that it loads.
std::unique_ptr<gateway::KeyStore> KeyStoreOf(const std::vector<std::string>& entries);

}  // namespace dnaserve::testing
