// Expected plans, checked in (like mpibind's test-suite/expected/): for every
// shipped hwloc and NCCL topology the planner's answer to a few request shapes
// is stored in tests/fixtures/expected/<fixture>.json, one file per machine,
// one task per line. This test diffs the planner's current output against
// them, so a planner change shows up in review as changed answers.
//
// Regenerate after an intended change:   make golden
// (runs this test with GPUTOPO_UPDATE_GOLDEN=1, which writes the files instead
// of comparing). Files the loader rejects by design are listed in
// tests/fixtures/expected/skipped.txt (compared too; reasons in the README).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/output/json_writer.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"

using gputopo::CpuSet;
using gputopo::JsonWriter;
using gputopo::Mode;
using gputopo::Node;
using gputopo::PlanRequest;

namespace {

struct Shape {
    std::string name;
    PlanRequest request;
};

// The PUs of the first `per_numa` cores (PUs when the source knows no cores)
// of every NUMA node: a step that was given a few CPUs on each NUMA node.
CpuSet first_cores_per_numa(const Node& n, int per_numa) {
    CpuSet out;
    for (const auto& numa : n.numa_nodes) {
        int taken = 0;
        if (!n.cores.empty()) {
            for (const auto& c : n.cores)
                if (taken < per_numa && numa.cpus.contains(c.pus)) {
                    out |= c.pus;
                    ++taken;
                }
        } else {
            for (int pu : numa.cpus.to_vector())
                if (taken++ < per_numa) out.set(pu);
        }
    }
    return out;
}

// The PUs of the first quarter of the node's cores, in core order: a step
// confined to part of one socket.
CpuSet first_quarter(const Node& n) {
    CpuSet out;
    if (n.cores.empty()) {
        std::vector<int> pus = n.cpus.to_vector();
        for (size_t i = 0; i < (pus.size() + 3) / 4; ++i) out.set(pus[i]);
        return out;
    }
    for (size_t i = 0; i < (n.cores.size() + 3) / 4; ++i) out |= n.cores[i].pus;
    return out;
}

std::vector<Shape> shapes_for(const Node& n) {
    const int ngpus = static_cast<int>(n.gpus.size());
    std::vector<int> all;
    for (int i = 0; i < ngpus; ++i) all.push_back(i);
    auto req = [&](int ntasks, Mode mode) {
        PlanRequest r;
        r.gpus = all;
        r.ntasks = ntasks;
        r.mode = mode;
        return r;
    };
    std::vector<Shape> out;
    out.push_back({"closest: one task per GPU", req(ngpus, Mode::Closest)});
    out.push_back({"island: two tasks", req(2, Mode::Island)});
    if (ngpus >= 2) {
        PlanRequest r = req(ngpus / 2, Mode::Closest);
        r.gpus_per_task = 2;
        out.push_back({"closest: two GPUs per task", r});
    }
    out.push_back({"closest: two tasks per GPU", req(2 * ngpus, Mode::Closest)});
    PlanRequest q = req(ngpus, Mode::Closest);
    q.allowed_cpus = first_quarter(n);
    out.push_back({"closest: one task per GPU, allowed CPUs the first quarter of the cores", q});
    PlanRequest s = req(ngpus, Mode::Closest);
    s.allowed_cpus = first_cores_per_numa(n, 2);
    out.push_back({"closest: one task per GPU, allowed CPUs two cores per NUMA node", s});
    PlanRequest o = req(2 * ngpus, Mode::Closest);
    o.allowed_cpus = first_cores_per_numa(n, 2);
    out.push_back({"closest: two tasks per GPU, allowed CPUs two cores per NUMA node", o});
    o.whole_cores = true;
    out.push_back({"closest: two tasks per GPU, allowed CPUs two cores per NUMA node, whole cores", o});
    return out;
}

void write_request(JsonWriter& w, const PlanRequest& r) {
    w.begin_object(JsonWriter::Inline);
    w.key("gpus").value(gputopo::index_list(r.gpus));
    w.key("ntasks").value(r.ntasks);
    w.key("gpus_per_task").value(r.gpus_per_task);
    w.key("mode").value(gputopo::mode_name(r.mode));
    w.key("allowed_cpus").value(r.allowed_cpus ? r.allowed_cpus->to_list() : std::string("all"));
    w.key("whole_cores").value(r.whole_cores);
    w.end_object();
}

// One shape's block as it appears in the machine's file: indented by four
// spaces, no trailing comma or newline.
std::string shape_block(const Node& n, const Shape& s) {
    JsonWriter w(2);
    w.begin_object();
    w.key("shape").value(s.name);
    w.key("request");
    write_request(w, s.request);
    w.key("plan");
    gputopo::write_plan_json(w, gputopo::make_plan(n, s.request));
    w.end_object();
    std::istringstream lines(w.str());
    std::string line, out;
    while (std::getline(lines, line)) out += (out.empty() ? "    " : "\n    ") + line;
    return out;
}

std::string machine_document(const std::string& fixture, const Node& n) {
    std::string out = "{\n  \"fixture\": " + gputopo::json_quote(fixture) + ",\n  \"plans\": [\n";
    std::vector<Shape> shapes = shapes_for(n);
    for (size_t i = 0; i < shapes.size(); ++i) out += shape_block(n, shapes[i]) + (i + 1 < shapes.size() ? ",\n" : "\n");
    return out + "  ]\n}\n";
}

std::string expected_dir() { return gputopo_test::source_dir() + "/tests/fixtures/expected"; }

// "hwloc/NAME.xml" -> "NAME.json"
std::string expected_name(const std::string& fixture) {
    std::string base = fixture.substr(fixture.find('/') + 1);
    return base.substr(0, base.size() - 4) + ".json";
}

bool read_text(const std::string& path, std::string& out) {
    std::ifstream in(path);
    if (!in) return false;
    std::stringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    REQUIRE(out.good());
}

// Line of the first difference, with both lines.
std::string first_difference(const std::string& want, const std::string& got) {
    std::istringstream a(want), b(got);
    std::string la, lb;
    for (int line = 1;; ++line) {
        bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
        if (!ha && !hb) return "no difference";
        if (!ha || !hb || la != lb)
            return "line " + std::to_string(line) + ":\n  expected: " + (ha ? la : "<end of file>") +
                   "\n  planner:  " + (hb ? lb : "<end of file>");
    }
}

bool updating() {
    const char* v = std::getenv("GPUTOPO_UPDATE_GOLDEN");
    return v && *v && std::string(v) != "0";
}

}  // namespace

TEST_CASE("plans equal the checked-in expected plans of every shipped machine", "[planner][golden]") {
    std::string skipped;
    int machines = 0, plans = 0;
    for (const auto& fixture : gputopo_test::topology_files()) {
        Node n;
        try {
            n = gputopo::load_topology_file(gputopo_test::topology(fixture));
        } catch (const std::exception& e) {
            skipped += fixture + "\n";  // why: tests/fixtures/expected/README.md
            if (updating()) WARN("no expected plans for " << fixture << ": " << e.what());
            continue;
        }
        ++machines;
        const std::string path = expected_dir() + "/" + expected_name(fixture);
        const std::string got = machine_document(fixture, n);
        if (updating()) {
            write_text(path, got);
            continue;
        }
        std::string want;
        INFO("machine " << fixture << " (" << path << ")");
        if (!read_text(path, want)) FAIL("no expected plans: run `make golden` and review the new file");
        if (want == got) {
            plans += static_cast<int>(shapes_for(n).size());
            continue;
        }
        // Name the shapes whose block is not in the expected file as it stands.
        std::string shapes;
        for (const auto& s : shapes_for(n))
            if (want.find(shape_block(n, s)) == std::string::npos) shapes += "\n  shape: " + s.name;
        FAIL("the plans differ from the expected ones for" << shapes << "\nfirst difference at "
                                                            << first_difference(want, got)
                                                            << "\n(an intended planner change: `make golden`, review "
                                                               "and commit the diff)");
    }
    const std::string skipped_path = expected_dir() + "/skipped.txt";
    if (updating()) {
        write_text(skipped_path, skipped);
        WARN("wrote the expected plans of " << machines << " machines to " << expected_dir());
        return;
    }
    std::string want_skipped;
    REQUIRE(read_text(skipped_path, want_skipped));
    INFO("files the loader rejects (" << skipped_path << "): " << first_difference(want_skipped, skipped));
    CHECK(want_skipped == skipped);
    CHECK(machines >= 30);
    CHECK(plans >= machines * 7);
}
