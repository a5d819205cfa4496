#include "tests/support/predict_requests.h"

#include <random>

namespace dnaserve::testing {

std::string RandomBases(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(static_cast<size_t>(n), 'A');
  for (char& c : out) c = "ACGT"[rng() % 4];
  return out;
}

int64_t ScoredBases(Task task, int64_t length) {
  return task == Task::kExpression ? kExpressionWindowBp : length;
}

worker::v1::PredictRequest RequestFor(Task task, int64_t length, unsigned seed) {
  namespace v1 = worker::v1;
  v1::PredictRequest request;
  request.set_sequence(RandomBases(ScoredBases(task, length), seed));
  request.set_sequence_name("chrT");
  switch (task) {
    case Task::kPromoter:
      request.mutable_promoter()->set_threshold(0.5);
      break;
    case Task::kSplice: {
      auto* s = request.mutable_splice();
      s->set_threshold(0.5);
      s->add_site_types(v1::SPLICE_SITE_TYPE_DONOR);
      s->add_site_types(v1::SPLICE_SITE_TYPE_ACCEPTOR);
      s->set_max_sites(kSpliceMaxSites);
      break;
    }
    case Task::kEnhancer:
      request.mutable_enhancer();
      break;
    case Task::kChromatin:
      request.mutable_chromatin()->set_threshold(0.5);
      break;
    case Task::kAnnotation: {
      auto* a = request.mutable_annotation();
      a->set_batch_size(8);
      a->set_reverse_complement(true);
      break;
    }
    case Task::kExpression:
      request.mutable_expression()->set_description("adult liver");
      break;
  }
  return request;
}

}  // namespace dnaserve::testing
