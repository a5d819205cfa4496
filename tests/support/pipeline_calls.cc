#include "tests/support/pipeline_calls.h"

#include <catch2/catch.hpp>

#include <utility>

#include "tests/support/key_entries.h"

namespace dnaserve::testing {

std::future<gateway::HttpResponse> StartPipelineCall(const gateway::RequestPipeline& pipeline,
                                                     gateway::HttpRequest request) {
  // Shared: the pipeline may copy its callback, and the promise must outlive every copy.
  auto done = std::make_shared<std::promise<gateway::HttpResponse>>();
  auto future = done->get_future();
  pipeline.Handle(std::move(request), [done](gateway::HttpResponse r) { done->set_value(std::move(r)); });
  return future;
}

gateway::HttpResponse CallPipeline(const gateway::RequestPipeline& pipeline,
                                   gateway::HttpRequest request, std::chrono::seconds timeout) {
  auto future = StartPipelineCall(pipeline, std::move(request));
  REQUIRE(future.wait_for(timeout) == std::future_status::ready);
  return future.get();
}

std::unique_ptr<gateway::KeyStore> KeyStoreOf(const std::vector<std::string>& entries) {
  auto parsed = gateway::KeyStore::FromJson(KeysFile(entries));
  REQUIRE(parsed.ok());
  return std::make_unique<gateway::KeyStore>(std::move(parsed).value());
}

}  // namespace dnaserve::testing
