// Must not compile: the core is below the runner.
#include "runner/queue_runner.h"
