// The metrics registry and the operations listener: exact text exposition output, label
// escaping, histogram buckets, concurrent updates, and real HTTP over loopback.
#include <catch2/catch.hpp>

#include <thread>

#include "common/observability/admin_server.h"
#include "common/observability/metrics.h"
#include "tests/support/test_env.h"

using namespace dnaserve;

TEST_CASE("counters and gauges render in the text exposition format", "[observability]") {
  metrics::Registry registry;
  auto& requests = registry.AddCounter("t_requests_total", "Requests.\nSecond line \\ here",
                                       {"route", "status"});
  auto& depth = registry.AddGauge("t_depth", "Queue depth");
  requests.With({"/v1/x", "200"}).Inc();
  requests.With({"/v1/x", "200"}).Inc(2);
  requests.With({"/v1/x", "200"}).Inc(-5);  // ignored: counters never go down
  requests.With({"say \"hi\"\n", "500"}).Inc();
  depth.With({}).Set(7);
  depth.With({}).Add(-2.5);

  CHECK(registry.Render() ==
        "# HELP t_requests_total Requests.\\nSecond line \\\\ here\n"
        "# TYPE t_requests_total counter\n"
        "t_requests_total{route=\"/v1/x\",status=\"200\"} 3\n"
        "t_requests_total{route=\"say \\\"hi\\\"\\n\",status=\"500\"} 1\n"
        "# HELP t_depth Queue depth\n"
        "# TYPE t_depth gauge\n"
        "t_depth 4.5\n");
}

TEST_CASE("histograms count each value in the first bucket whose bound is >= it",
          "[observability]") {
  metrics::Registry registry;
  auto& h = registry.AddHistogram("t_seconds", "Latency", {"task"}, {1, 0.5, 2});  // unsorted
  for (double v : {0.25, 0.5, 0.75, 2.0, 9.0}) h.With({"splice"}).Observe(v);
  CHECK(registry.Render() ==
        "# HELP t_seconds Latency\n"
        "# TYPE t_seconds histogram\n"
        "t_seconds_bucket{task=\"splice\",le=\"0.5\"} 2\n"
        "t_seconds_bucket{task=\"splice\",le=\"1\"} 3\n"
        "t_seconds_bucket{task=\"splice\",le=\"2\"} 4\n"
        "t_seconds_bucket{task=\"splice\",le=\"+Inf\"} 5\n"
        "t_seconds_sum{task=\"splice\"} 12.5\n"
        "t_seconds_count{task=\"splice\"} 5\n");
  CHECK(metrics::PowersOfTwo(8) == std::vector<double>{1, 2, 4, 8});
  CHECK(metrics::LatencyBuckets().back() == 300);
}

TEST_CASE("callback families are read at render time", "[observability]") {
  metrics::Registry registry;
  int queued = 1;
  registry.AddCallback("t_queue", "Waiting", "gauge", {"model"}, [&queued] {
    return std::vector<std::pair<metrics::LabelValues, double>>{{{"m1"}, double(queued)}};
  });
  CHECK(registry.Render().find("t_queue{model=\"m1\"} 1\n") != std::string::npos);
  queued = 42;
  CHECK(registry.Render().find("t_queue{model=\"m1\"} 42\n") != std::string::npos);
}

TEST_CASE("concurrent updates are not lost", "[observability]") {
  metrics::Registry registry;
  auto& counter = registry.AddCounter("t_total", "n", {"worker"});
  auto& hist = registry.AddHistogram("t_h", "n", {}, {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        counter.With({t % 2 ? "a" : "b"}).Inc();
        hist.With({}).Observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(counter.With({"a"}).Value() == 40000);
  CHECK(counter.With({"b"}).Value() == 40000);
  auto snapshot = hist.With({}).Read();
  CHECK(snapshot.count == 80000);
  CHECK(snapshot.sum == Approx(40000));
}

TEST_CASE("the admin listener serves its routes over HTTP and nothing else", "[observability]") {
  metrics::Registry registry;
  registry.AddCounter("t_scrapes_total", "n").With({}).Inc();
  observability::AdminServer server(
      "127.0.0.1:0",
      {{"/metrics",
        [&registry] {
          return observability::AdminResponse{200, metrics::kTextFormatContentType,
                                              registry.Render()};
        }},
       {"/ready", [] { return observability::AdminResponse{503, "application/json", "{}"}; }}});
  REQUIRE(server.Start().ok());
  REQUIRE(server.port() > 0);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());

  auto scrape = testing::HttpRequest("GET", base + "/metrics");
  CHECK(scrape.status == 200);
  CHECK(scrape.Header("content-type") == std::string(metrics::kTextFormatContentType));
  CHECK(scrape.body.find("t_scrapes_total 1\n") != std::string::npos);
  CHECK(testing::HttpRequest("GET", base + "/ready").status == 503);
  CHECK(testing::HttpRequest("GET", base + "/nope").status == 404);
  CHECK(testing::HttpRequest("POST", base + "/metrics", {}, "x").status == 405);
  server.Stop();
  CHECK(testing::HttpRequest("GET", base + "/metrics", {}, "", 2).status == 0);
}

TEST_CASE("listen addresses are checked before binding", "[observability]") {
  auto ok = observability::ParseListenAddress("0.0.0.0:9090");
  REQUIRE(ok.ok());
  CHECK(ok->first == "0.0.0.0");
  CHECK(ok->second == 9090);
  for (const char* bad : {"9090", ":9090", "host:", "host:http", "host:70000", "host:123456"}) {
    INFO(bad);
    CHECK(observability::ParseListenAddress(bad).status().code() == ErrorCode::kBadRequest);
  }
  observability::AdminServer taken("127.0.0.1:notaport", {});
  CHECK_FALSE(taken.Start().ok());
}
