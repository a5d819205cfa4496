// Must not compile: the core knows no transport, so it cannot see the gateway.
#include "gateway/http/http_types.h"
