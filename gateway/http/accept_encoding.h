// Accept-Encoding (RFC 9110 section 12.5.3), reduced to the one question the gateway asks:
// may this response be sent gzip-compressed?
#pragma once

#include <optional>
#include <string_view>

namespace dnaserve::gateway {

// True when the header lists "gzip" (or its alias "x-gzip") with a non-zero q-value, or, when
// neither is listed, "*" with a non-zero q-value. Case-insensitive; "gzip;q=0" and a missing
// header mean no. A malformed q-value makes its entry unacceptable (a client is never sent an
// encoding it may not understand).
bool AcceptsGzip(std::optional<std::string_view> accept_encoding);

}  // namespace dnaserve::gateway
