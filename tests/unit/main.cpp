// Catch2 v2 main for the unit tests. Each tests/unit/test_*.cpp adds cases.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
