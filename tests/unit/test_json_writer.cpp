#include <catch2/catch.hpp>

#include <climits>
#include <cmath>
#include <stdexcept>

#include "tests/unit/json_parse.hpp"
#include "topo/output/json_writer.hpp"

using gputopo::JsonWriter;
using gputopo::json_quote;
using gputopo_test::JsonParser;
using gputopo_test::JsonValue;

TEST_CASE("json_quote escapes quotes, backslashes and control characters", "[json]") {
    CHECK(json_quote("") == "\"\"");
    CHECK(json_quote("mlx5_0") == "\"mlx5_0\"");
    CHECK(json_quote("a\"b") == "\"a\\\"b\"");
    CHECK(json_quote("a\\b") == "\"a\\\\b\"");
    CHECK(json_quote("l1\nl2\r\t") == "\"l1\\nl2\\r\\t\"");
    CHECK(json_quote(std::string("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001f\\u007f\"");
    CHECK(json_quote(std::string("a\0b", 3)) == "\"a\\u0000b\"");
    CHECK(json_quote("\b\f") == "\"\\b\\f\"");
    CHECK(json_quote("/") == "\"/\"");
}

TEST_CASE("json_quote keeps valid UTF-8 and replaces invalid bytes with U+FFFD", "[json]") {
    CHECK(json_quote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");               // 2-byte
    CHECK(json_quote("\xe6\x97\xa5") == "\"\xe6\x97\xa5\"");             // 3-byte
    CHECK(json_quote("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");     // 4-byte
    CHECK(json_quote("a\xff" "b") == "\"a\\ufffdb\"");                   // never valid
    CHECK(json_quote("\xc3") == "\"\\ufffd\"");                          // truncated
    CHECK(json_quote("\xc0\xaf") == "\"\\ufffd\\ufffd\"");               // overlong '/'
    CHECK(json_quote("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");    // UTF-16 surrogate
    CHECK(json_quote("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // above U+10FFFF
    CHECK(json_quote("\xe6\x97") == "\"\\ufffd\\ufffd\"");               // cut 3-byte sequence
}

TEST_CASE("odd device names survive a JSON round trip", "[json]") {
    const std::vector<std::string> names = {
        "mlx5_0", "a \"quoted\" name", "back\\slash", "tab\there", "new\nline", std::string("nul\0in", 6),
        "\x1b[31mred\x1b[0m", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "{\"json\": [1,2]}", "",
    };
    for (const auto& n : names) {
        INFO(n);
        JsonWriter w(2);
        w.begin_object().key(n).value(n).end_object();
        JsonValue v = JsonParser::parse(w.str());
        REQUIRE(v.type == JsonValue::Object);
        REQUIRE(v.obj.size() == 1);
        CHECK(v.obj[0].first == n);
        CHECK(v.obj[0].second.str == n);
    }
}

TEST_CASE("JsonWriter one-line output uses ', ' and ': ' separators", "[json]") {
    JsonWriter w;
    w.begin_object();
    w.key("a").value(1);
    w.key("b").begin_array().value(true).null().value("x").end_array();
    w.key("c").begin_object().end_object();
    w.key("d").begin_array().end_array();
    w.key("e").value(std::vector<int>{3, 4});
    w.end_object();
    CHECK(w.str() == "{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": {}, \"d\": [], \"e\": [3, 4]}");
}

TEST_CASE("JsonWriter indented output keeps Inline containers on one line", "[json]") {
    JsonWriter w(2);
    w.begin_object();
    w.key("mode").value("island");
    w.key("tasks").begin_array();
    w.begin_object(JsonWriter::Inline).key("task").value(0).key("gpus").value(std::vector<int>{3}).end_object();
    w.begin_object(JsonWriter::Inline).key("task").value(1).key("gpus").value(std::vector<int>{}).end_object();
    w.end_array();
    w.key("empty").begin_array().end_array();
    w.key("nested").begin_object().key("x").value(false).end_object();
    w.end_object();
    const std::string expected =
        "{\n"
        "  \"mode\": \"island\",\n"
        "  \"tasks\": [\n"
        "    {\"task\": 0, \"gpus\": [3]},\n"
        "    {\"task\": 1, \"gpus\": []}\n"
        "  ],\n"
        "  \"empty\": [],\n"
        "  \"nested\": {\n"
        "    \"x\": false\n"
        "  }\n"
        "}";
    CHECK(w.str() == expected);
    CHECK_NOTHROW(JsonParser::parse(w.str()));
}

TEST_CASE("JsonWriter numbers: integers exact, doubles round-trip, NaN is null", "[json]") {
    JsonWriter w;
    w.begin_array();
    w.value(LLONG_MIN).value(ULLONG_MAX).value(0.1).value(400.0).value(1e300).value(-2.5);
    w.value(std::nan("")).value(HUGE_VAL).value(0u).value(-7L);
    w.end_array();
    CHECK(w.str() ==
          "[-9223372036854775808, 18446744073709551615, 0.1, 400, 1e+300, -2.5, null, null, 0, -7]");
    JsonValue v = JsonParser::parse(w.str());
    CHECK(v[2].num == 0.1);
    CHECK(v[4].num == 1e300);
    CHECK(v[6].type == JsonValue::Null);
}

TEST_CASE("JsonWriter rejects misuse", "[json]") {
    {
        JsonWriter w;
        w.begin_object();
        CHECK_THROWS_AS(w.value(1), std::logic_error);  // no key
        CHECK_THROWS_AS(w.end_array(), std::logic_error);
        w.key("k");
        CHECK_THROWS_AS(w.key("k2"), std::logic_error);
        CHECK_THROWS_AS(w.end_object(), std::logic_error);  // key without value
        CHECK_THROWS_AS(w.str(), std::logic_error);         // incomplete
    }
    {
        JsonWriter w;
        CHECK_THROWS_AS(w.key("k"), std::logic_error);
        w.value(1);
        CHECK(w.complete());
        CHECK_THROWS_AS(w.value(2), std::logic_error);  // second top-level value
        CHECK(w.str() == "1");
    }
}

TEST_CASE("the test JSON parser itself rejects invalid JSON", "[json]") {
    for (const char* bad : {"{", "[1,]", "{\"a\" 1}", "{'a': 1}", "\"\x01\"", "[01]", "nul", "{\"a\":1,\"a\":2}",
                            "\"\\ud800\"", "1 2", "[1.]"}) {
        INFO(bad);
        CHECK_THROWS(JsonParser::parse(bad));
    }
    CHECK(JsonParser::parse("\"\\u00e9\\ud83d\\ude00\"").str == "\xc3\xa9\xf0\x9f\x98\x80");
}
