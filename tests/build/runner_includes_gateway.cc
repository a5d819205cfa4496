// Must not compile: the runner stands on the core and sees nothing of the gateway (see
// tests/CMakeLists.txt, "build:" tests).
#include "gateway/http/http_types.h"
