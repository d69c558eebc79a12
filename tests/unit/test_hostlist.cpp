// Hostlist expressions: expansion, compression and lookup, Slurm semantics.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "topo/core/errors.hpp"
#include "topo/fabric/hostlist.hpp"

using gputopo::Hostlist;
using gputopo::ParseError;

namespace {

std::vector<std::string> names(const std::string& expr) { return Hostlist::parse(expr).expand(); }

std::string padded(const char* prefix, int v, int width) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%0*d", prefix, width, v);
    return buf;
}

}  // namespace

TEST_CASE("hostlist: plain names, ranges and zero padding", "[hostlist]") {
    CHECK(names("login1") == std::vector<std::string>{"login1"});
    CHECK(names("gpu[001-003,200],login1") ==
          std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu200", "login1"});
    // Width is the number of digits written for LO.
    CHECK(names("n[8-11]") == std::vector<std::string>{"n8", "n9", "n10", "n11"});
    CHECK(names("n[08-11]") == std::vector<std::string>{"n08", "n09", "n10", "n11"});
    CHECK(names("n[98-101]") == std::vector<std::string>{"n98", "n99", "n100", "n101"});
    CHECK(names("n[098-101]") == std::vector<std::string>{"n098", "n099", "n100", "n101"});
    // Separators: comma, space, tab; empty items skipped.
    CHECK(names(" a1,,b\tc[1-2] ") == std::vector<std::string>{"a1", "b", "c1", "c2"});
    CHECK(names("").empty());
    // A prefix ending in digits (Cray style).
    CHECK(names("nid0000[2-4]") == std::vector<std::string>{"nid00002", "nid00003", "nid00004"});
    // Order and duplicates are kept as written.
    CHECK(names("n3,n1,n2,n1") == std::vector<std::string>{"n3", "n1", "n2", "n1"});
}

TEST_CASE("hostlist: several bracket groups expand left to right", "[hostlist]") {
    CHECK(names("rack[1-2]-node[01-02]") ==
          std::vector<std::string>{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
    CHECK(names("r[1,3]s[0-1]n[7]") ==
          std::vector<std::string>{"r1s0n7", "r1s1n7", "r3s0n7", "r3s1n7"});
    Hostlist hl = Hostlist::parse("rack[1-2]-node[01-04],x");
    CHECK(hl.count() == 9);
    CHECK(hl.ranged() == "rack1-node[01-04],rack2-node[01-04],x");
}

TEST_CASE("hostlist: compression as Slurm writes it", "[hostlist]") {
    CHECK(Hostlist::from_names({"n1", "n2", "n3"}).ranged() == "n[1-3]");
    CHECK(Hostlist::from_names({"n9", "n10", "n11"}).ranged() == "n[9-11]");
    CHECK(Hostlist::from_names({"n09", "n10"}).ranged() == "n[09-10]");
    // n9 and n010 print differently padded: not one run.
    CHECK(Hostlist::from_names({"n9", "n010"}).ranged() == "n[9,010]");
    CHECK(Hostlist::from_names({"n1", "n3", "n5", "m2"}).ranged() == "n[1,3,5],m2");
    CHECK(Hostlist::from_names({"a", "b1", "c"}).ranged() == "a,b1,c");
    CHECK(Hostlist::from_names({"n1", "x", "n2"}).ranged() == "n1,x,n2");
    // Not sorted, not deduplicated.
    CHECK(Hostlist::from_names({"n2", "n1", "n1"}).ranged() == "n[2,1,1]");
    CHECK(Hostlist::parse("gpu[001-128,200],login1").ranged() == "gpu[001-128,200],login1");
    CHECK(Hostlist::parse("n[1-3],n[4-6]").ranged() == "n[1-6]");
    CHECK(Hostlist::parse("n[1-3],n[5-6]").ranged() == "n[1-3,5-6]");
}

TEST_CASE("hostlist: round trip on generated names", "[hostlist]") {
    // Names built independently with printf; compress then expand must give them back.
    std::vector<std::string> in;
    for (int i = 0; i < 300; i += (i % 7 == 0 ? 3 : 1)) in.push_back(padded("gpu", i, 3));
    for (int i = 5; i < 20; ++i) in.push_back(padded("cn", i, 1));
    in.push_back("login");
    Hostlist hl = Hostlist::from_names(in);
    CHECK(hl.count() == in.size());
    CHECK(Hostlist::parse(hl.ranged()).expand() == in);
    for (size_t i = 0; i < in.size(); ++i) {
        CHECK(hl.nth(i) == in[i]);
        REQUIRE(hl.index_of(in[i]).has_value());
        CHECK(*hl.index_of(in[i]) == i);
    }
}

TEST_CASE("hostlist: index_of respects padding and prefixes", "[hostlist]") {
    Hostlist hl = Hostlist::parse("n[1-5],m[08-12],nid0000[2-7],login,n[100-101]");
    CHECK(hl.index_of("n1") == 0u);
    CHECK_FALSE(hl.index_of("n01"));
    CHECK(hl.index_of("m08") == 5u);
    CHECK_FALSE(hl.index_of("m8"));
    CHECK(hl.index_of("m12") == 9u);
    CHECK(hl.index_of("nid00002") == 10u);
    CHECK(hl.index_of("nid00007") == 15u);
    CHECK_FALSE(hl.index_of("nid00008"));
    CHECK(hl.index_of("login") == 16u);
    CHECK(hl.index_of("n101") == 18u);
    CHECK_FALSE(hl.index_of("n6"));
    CHECK_FALSE(hl.index_of("x"));
    CHECK_THROWS_AS(hl.nth(19), std::out_of_range);
}

TEST_CASE("hostlist: bad expressions name the input and what was expected", "[hostlist]") {
    const char* bad[] = {"n[1-", "n[5-3]", "n[a-b]", "n[]", "n[1-2]x", "n]1", "n[[1]]", "n[1,,2]",
                         "n[1-2-3]", "n[0-99999999]", "n[1234567890123456789]"};
    for (const char* b : bad) {
        INFO(b);
        try {
            Hostlist::parse(b);
            FAIL("accepted " << b);
        } catch (const ParseError& e) {
            std::string msg = e.what();
            CHECK(msg.find(std::string("'") + b + "'") != std::string::npos);
            CHECK(msg.find("expected") != std::string::npos);
        }
    }
}

TEST_CASE("hostlist: 100,000 nodes stay compressed", "[hostlist]") {
    // Every other node of 200,000: 100,000 ranges of one host each.
    std::string expr = "gpu[";
    for (int i = 0; i < 200000; i += 2) {
        if (i) expr += ',';
        expr += padded("", i, 6);
    }
    expr += "]";
    Hostlist hl = Hostlist::parse(expr);
    REQUIRE(hl.count() == 100000);
    CHECK(hl.nth(0) == "gpu000000");
    CHECK(hl.nth(99999) == "gpu199998");
    CHECK(hl.nth(12345) == padded("gpu", 24690, 6));
    CHECK(hl.index_of("gpu024690") == 12345u);
    CHECK_FALSE(hl.index_of("gpu024691"));
    CHECK(hl.ranged() == expr);

    Hostlist big = Hostlist::parse("n[000001-100000]");
    CHECK(big.count() == 100000);
    CHECK(big.ranges().size() == 1);
    CHECK(big.nth(99999) == "n100000");
    CHECK(big.index_of("n050000") == 49999u);
    uint64_t seen = 0;
    big.for_each_host([&](size_t, const gputopo::HostRange&, uint64_t v) { seen += v; });
    CHECK(seen == 100000ull * 100001ull / 2);
}

TEST_CASE("hostlist: a short expression cannot cost more than the byte budget", "[hostlist]") {
    // 18 bytes that expanded to 2,097,152 ranges (~100 MB) before the budget.
    const std::string bomb = "a[0-1048575]b[0-1]";
    CHECK_THROWS_WITH(Hostlist::parse(bomb), Catch::Contains("'" + bomb + "'") && Catch::Contains("MiB"));
    // Many smaller items that each pass the per-item limit add up to the same budget.
    std::string many;
    for (int i = 0; i < 215; ++i) many += (i ? "," : "") + std::string("x") + std::to_string(i) + "[0-16383]y[0-1]";
    CHECK_THROWS_WITH(Hostlist::parse(many), Catch::Contains("MiB"));
    // Below the budget, expansion is unchanged: every (a, b) pair in order.
    Hostlist ok = Hostlist::parse("a[0-1023]b[0-1]");
    REQUIRE(ok.count() == 2048);
    CHECK(ok.nth(0) == "a0b0");
    CHECK(ok.nth(1) == "a0b1");
    CHECK(ok.nth(2047) == "a1023b1");
    // A long flat list of separate hosts (what Slurm itself writes) stays well inside it.
    std::string flat = "gpu[";
    for (int i = 0; i < 200000; i += 2) flat += (i ? "," : "") + padded("", i, 6);
    flat += "]";
    CHECK(Hostlist::parse(flat).count() == 100000);
}

TEST_CASE("hostlist: parsing is linear in the number of items", "[hostlist]") {
    // 40,000 separate bracket items: 3.3 s for 20,000 and 14.7 s for 40,000
    // before (every bracket item re-reserved the range vector to its exact
    // size, copying all ranges); a linear parse takes well under a second even
    // under the sanitizers.
    std::string expr;
    for (int i = 0; i < 40000; ++i)
        expr += (i ? "," : "") + std::string("r") + std::to_string(i % 7) + "n[" + std::to_string(i * 3) + "]";
    auto t0 = std::chrono::steady_clock::now();
    Hostlist hl = Hostlist::parse(expr);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(hl.count() == 40000);
    CHECK(hl.nth(39999) == "r" + std::to_string(39999 % 7) + "n" + std::to_string(39999 * 3));
    CHECK(s < 2.0);
}

TEST_CASE("hostlist: names with more than 18 trailing digits are found behind a digit prefix", "[hostlist]") {
    // Slurm's rule that "nid0000[2-7]" holds "nid00003", with a prefix whose
    // digits make the name's digit run longer than a number can be.
    const std::string prefix = "nid" + std::string(20, '0');
    Hostlist hl = Hostlist::parse("login," + prefix + "[2-7],n[1-3]");
    CHECK(hl.index_of(prefix + "2") == 1u);
    CHECK(hl.index_of(prefix + "7") == 6u);
    CHECK_FALSE(hl.index_of(prefix + "8"));
    CHECK(hl.index_of("n3") == 9u);
    // Each one is the name nth() gives.
    for (uint64_t i = 0; i < hl.count(); ++i) CHECK(hl.index_of(hl.nth(i)) == i);
    // A plain name with a long digit run is a literal host and found as one.
    const std::string literal = "x" + std::string(25, '9');
    Hostlist one = Hostlist::parse("a1," + literal);
    CHECK(one.index_of(literal) == 1u);
}
