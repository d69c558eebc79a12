// Splitting and joining lists written as text (topo/core/strings.hpp).
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

TEST_CASE("split_field_views: the same fields as views into the text", "[strings]") {
    const std::string text = "gpu\t0\t\t0000:17:00.0";
    auto views = gputopo::split_field_views(text, '\t');
    REQUIRE(views.size() == 4);
    CHECK(V(views.begin(), views.end()) == split_fields(text, '\t'));
    CHECK(views[3].data() == text.data() + text.find("0000"));  // no copy
    CHECK(gputopo::split_field_views("", ',').size() == 1);
}

TEST_CASE("join is split's inverse: every item, empty ones too", "[strings]") {
    // Round trips, the empty fields included (a separator per gap, none at the ends).
    for (const std::string text : {"a,,b", "", ",", "closest,verbose", ",x,"})
        CHECK(gputopo::join_strings(split_fields(text, ','), ",") == text);
    CHECK(gputopo::join_strings({"mlx5_0", "mlx5_1"}, "; ") == "mlx5_0; mlx5_1");
    CHECK(gputopo::join_strings({}) == "");
    CHECK(gputopo::join_ints({3, 0, 12}) == "3,0,12");
    CHECK(gputopo::join_ints({-1}, ":") == "-1");
    CHECK(gputopo::join_ints({}).empty());
}
