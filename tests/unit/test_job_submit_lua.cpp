// etc/job_submit.lua under Lua 5.1 (tests/unit/lua_runner.hpp): the work it does in
// slurmctld (under the job write lock) per --gpu-topo=island submission, and what it logs.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "tests/unit/lua_runner.hpp"

namespace {

// The shipped job_submit.lua beside `topology` in a fresh directory; runs `body` (Lua code
// that ends in `return <string>`) after loading it with a recording slurm table and an
// io.open that counts the opens of topology.conf (`opens`).
std::string run_job_submit(const std::string& topology, const std::string& body) {
    const std::string d = gputopo_test::job_submit_dir(topology);
    REQUIRE(!d.empty());
    const std::string harness = R"(
local logs = {}
slurm = { SUCCESS = 0, ERROR = -1, log_info = function(fmt, ...) logs[#logs + 1] = string.format(fmt, ...) end }
opens = 0
local real_open = io.open
io.open = function(path, mode)
    if string.find(path, "topology.conf", 1, true) then opens = opens + 1 end
    return real_open(path, mode)
end
assert(loadfile(")" + d + R"(/job_submit.lua"))()
local function submit(value, fields)
    local jd = { spank_job_env = { "_SLURM_SPANK_OPTION_gputopo_gpu_topo=" .. value } }
    for k, v in pairs(fields) do jd[k] = v end
    assert(slurm_job_submit(jd, {}, 1000) == 0)
    return jd
end
)" + body;
    const std::string out = gputopo_test::run_lua(harness);
    std::remove((d + "/job_submit.lua").c_str());
    std::remove((d + "/topology.conf").c_str());
    rmdir(d.c_str());
    return out;
}

}  // namespace

TEST_CASE("job_submit.lua: topology.conf read once per submission, hostlists counted without expanding (issue 33, finding 10)",
          "[lua]") {
    using clock = std::chrono::steady_clock;
    // One leaf of 100,000 single items (> 100 s before: the items were built a character at a time).
    std::string nodes = "n[";
    for (int i = 0; i < 100000; ++i) nodes += (i ? "," : "") + std::to_string(2 * i);
    nodes += "]";
    const std::string tree = "SwitchName=leaf1 Nodes=" + nodes + "\nSwitchName=leaf2 Nodes=m[1-4],x,r[1-2]y[01-18]\n" +
                             "SwitchName=spine Switches=leaf[1-2]\n";
    const auto t0 = clock::now();
    const std::string out = run_job_submit(tree, R"(
local a = submit("island", { min_nodes = 250000 })
local first = opens
local b = submit("island", { min_nodes = 4 })
return tostring(a.req_switch) .. " " .. tostring(b.req_switch) .. " " .. first .. " " .. (opens - first))");
    const double took = std::chrono::duration<double>(clock::now() - t0).count();
    if (out.empty()) {
        WARN("liblua5.1.so.0 is not installed: job_submit.lua not run");
        return;
    }
    // Largest leaf: 100,000 nodes (leaf2: 4 + 1 + 36 = 41); 250,000 nodes need 3 switches, 4 nodes 1.
    // Each submission opened topology.conf once (twice before: the block check, then the leaf sizes).
    CHECK(out == "3 1 1 1");
    CHECK(took < 10.0);
    // The block plugin's sizes, counted the same way: 18-node blocks.
    const std::string blocks = "BlockName=b1 Nodes=gb[001-018]\nBlockName=b2 Nodes=gb[019-036]\nBlockSizes=18\n";
    CHECK(run_job_submit(blocks, R"(
local jd = submit("island,tp=8,pp=4", { min_nodes = 36, ntasks_per_node = 4, segment_size = 0 })
return tostring(jd.segment_size) .. " " .. opens)") == "18 1");
}

TEST_CASE("job_submit.lua: a --gpu-topo value cannot forge a log line, sizes never log as overflowed numbers "
          "(issue 33, finding 13)", "[lua]") {
    const std::string blocks = "BlockName=b1 Nodes=gb[001-018]\nBlockSizes=18\n";
    const std::string out = run_job_submit(blocks, R"(
submit("island,tp=8\nslurmctld: error: forged", { min_nodes = 18, ntasks_per_node = 4, segment_size = 0 })
submit("island,tp=99999999999999999999,pp=2", { min_nodes = 18, ntasks_per_node = 4, segment_size = 0 })
submit("island,tp=4096,cp=4096", { min_nodes = 18, ntasks_per_node = 4, segment_size = 0 })
return table.concat(logs, "|"))");
    if (out.empty()) {
        WARN("liblua5.1.so.0 is not installed: job_submit.lua not run");
        return;
    }
    INFO(out);
    CHECK(out.find('\n') == std::string::npos);
    CHECK_THAT(out, Catch::Contains("--gpu-topo=island,tp=8\\010slurmctld: error: forged"));
    CHECK_THAT(out, Catch::Contains("no --segment (tp is not from 1 to 1048576)"));
    CHECK_THAT(out, Catch::Contains("no --segment (tp*cp*ep is more than 1048576 GPUs)"));
    CHECK(out.find("-9223372036854775808") == std::string::npos);
}

TEST_CASE("job_submit.lua: --segment with -w per release (25.11+ take it when -w names the job's nodes; "
          "23.11-25.05 refuse several segments with -w)",
          "[lua][segment]") {
    // 18-node blocks (GB200 NVL72 racks); tp=8,pp=4 on 36 nodes of 4 GPUs: --segment=18 (two segments).
    const std::string out = run_job_submit(
        "BlockName=rack1 Nodes=gb[001-018]\nBlockName=rack2 Nodes=gb[019-036]\nBlockSizes=18\n", R"(
local function seg(jd) return tostring(jd.segment_size) end
local r = {}
-- 26.05 (segment_size in job_submit/lua): -w naming all 36 nodes: set.
r[#r + 1] = seg(submit("island,tp=8,pp=4", { min_nodes = 36, ntasks_per_node = 4, segment_size = 0, req_nodes = "gb[001-036]" }))
-- -w naming 20 of the 36: Slurm would refuse the job ("requires less nodes than job size with segment"): none.
r[#r + 1] = seg(submit("island,tp=8,pp=4", { min_nodes = 36, ntasks_per_node = 4, segment_size = 0, req_nodes = "gb[001-010],gb[019-028]" }))
r[#r + 1] = logs[#logs]
-- One segment (18 nodes, segment 18): -w is no concern.
r[#r + 1] = seg(submit("island,tp=8,pp=4", { min_nodes = 18, ntasks_per_node = 4, segment_size = 0, req_nodes = "gb[001-009]" }))
-- 23.11-25.11 (no such field): the log names the value and the -w rule.
r[#r + 1] = seg(submit("island,tp=8,pp=4", { min_nodes = 36, ntasks_per_node = 4, req_nodes = "gb[001-036]" }))
r[#r + 1] = logs[#logs]
-- Without -w: the line as before.
submit("island,tp=8,pp=4", { min_nodes = 36, ntasks_per_node = 4 })
r[#r + 1] = logs[#logs]
return table.concat(r, "\n")
)");
    if (out.empty()) {
        WARN("liblua5.1.so.0 is not installed: job_submit.lua not run");
        return;
    }
    INFO(out);
    std::vector<std::string> lines;
    for (size_t a = 0, b; a <= out.size(); a = b + 1) {
        b = out.find('\n', a);
        if (b == std::string::npos) b = out.size();
        lines.push_back(out.substr(a, b - a));
    }
    REQUIRE(lines.size() == 7);
    CHECK(lines[0] == "18");
    CHECK(lines[1] == "0");
    CHECK(lines[2] == "gputopo: job from uid 1000: --gpu-topo=island,tp=8,pp=4: no --segment (-w names 20 nodes, "
                      "fewer than the job's 36: Slurm refuses several segments then)");
    CHECK(lines[3] == "18");
    CHECK(lines[4] == "nil");
    CHECK(lines[5] == "gputopo: job from uid 1000: --gpu-topo=island,tp=8,pp=4: this Slurm's job_submit/lua cannot set "
                      "--segment (26.05+): submit with --segment=18 (blocks of 18 nodes) to keep every TP*CP*EP group "
                      "in one block (with -w: Slurm 25.11+; 23.11-25.05 refuse -w with several segments)");
    CHECK(lines[6] == "gputopo: job from uid 1000: --gpu-topo=island,tp=8,pp=4: this Slurm's job_submit/lua cannot set "
                      "--segment (26.05+): submit with --segment=18 (blocks of 18 nodes) to keep every TP*CP*EP group "
                      "in one block");
}
