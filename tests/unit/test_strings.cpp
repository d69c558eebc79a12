// Splitting lists written as text (topo/core/strings.hpp).
#include <catch2/catch.hpp>

#include "topo/core/strings.hpp"

using gputopo::split_fields;
using gputopo::split_nonempty;
using V = std::vector<std::string>;

TEST_CASE("split_fields keeps every field, empty ones too", "[strings]") {
    CHECK(split_fields("a,,b", ',') == V{"a", "", "b"});
    CHECK(split_fields("", ',') == V{""});
    CHECK(split_fields(",", ',') == V{"", ""});
    CHECK(split_fields("closest,verbose", ',') == V{"closest", "verbose"});
    CHECK(split_fields("x\ty", '\t') == V{"x", "y"});
}

TEST_CASE("split_nonempty drops the empty fields", "[strings]") {
    CHECK(split_nonempty("a,,b,", ',') == V{"a", "b"});
    CHECK(split_nonempty("", ',').empty());
    CHECK(split_nonempty(";;", ';').empty());
    CHECK(split_nonempty("gputopo:exclude=n1;backoff=40", ';') == V{"gputopo:exclude=n1", "backoff=40"});
}
