#include "core/quota/principal.h"

namespace dnaserve::core {

const std::vector<S3Grant>& Principal::s3_read() const {
  static const std::vector<S3Grant> kNone;
  return s3 ? s3->read : kNone;
}

const std::vector<S3Grant>& Principal::s3_write() const {
  static const std::vector<S3Grant> kNone;
  return s3 ? s3->write : kNone;
}

}  // namespace dnaserve::core
