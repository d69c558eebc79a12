#include <catch2/catch.hpp>

#include "topo/core/cpuset.hpp"
#include "topo/core/errors.hpp"

using gputopo::CpuSet;

TEST_CASE("cpulist round trip", "[cpuset]") {
    CpuSet s = CpuSet::parse_list("0-3,8,10-11");
    CHECK(s.count() == 7);
    CHECK(s.test(0));
    CHECK(s.test(3));
    CHECK_FALSE(s.test(4));
    CHECK(s.test(11));
    CHECK(s.to_list() == "0-3,8,10-11");
    CHECK(CpuSet::parse_list("").empty());
    CHECK(CpuSet::parse_list(" 5 , 7-8 ").to_list() == "5,7-8");
    CHECK(CpuSet::parse_list("200").to_list() == "200");
}

TEST_CASE("cpulist rejects malformed text with the input in the message", "[cpuset]") {
    for (const char* bad : {"a", "1-", "3-1", "1,,2", "1,", "-1", "1;2"}) {
        INFO(bad);
        try {
            CpuSet::parse_list(bad);
            FAIL("accepted");
        } catch (const gputopo::ParseError& e) {
            CHECK(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos);
        }
    }
}

TEST_CASE("hex masks as hwloc and NCCL write them", "[cpuset]") {
    CHECK(CpuSet::parse_hex_mask("0x000000ff").to_list() == "0-7");
    CHECK(CpuSet::parse_hex_mask("000000ff,ffffffff").to_list() == "0-39");
    CHECK(CpuSet::parse_hex_mask("ffffffff,00000000").to_list() == "32-63");
    CHECK(CpuSet::parse_hex_mask("0x00000001,0x00000000,0x00000000").to_list() == "64");
    // NCCL dump of an OCI H100 node, socket 0: bits 0-55 and 112-167.
    auto s = CpuSet::parse_hex_mask("00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff");
    CHECK(s.to_list() == "0-55,112-167");
    CHECK_THROWS_AS(CpuSet::parse_hex_mask("xyz"), gputopo::ParseError);
    CHECK_THROWS_AS(CpuSet::parse_hex_mask("ff,,ff"), gputopo::ParseError);
}

TEST_CASE("set algebra", "[cpuset]") {
    CpuSet a = CpuSet::range(0, 9), b = CpuSet::range(5, 14);
    CHECK((a & b).to_list() == "5-9");
    CHECK((a | b).to_list() == "0-14");
    CHECK((a - b).to_list() == "0-4");
    CHECK(a.intersects(b));
    CHECK(a.contains(CpuSet::range(2, 3)));
    CHECK_FALSE(a.contains(b));
    CHECK(a.first() == 0);
    CHECK(b.last() == 14);
    CHECK(CpuSet().first() == -1);
    CHECK((a - a).empty());
    CHECK((a - a) == CpuSet());
}
