// The slow Catch2 TU, kept on its own so test files rebuild quickly.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
