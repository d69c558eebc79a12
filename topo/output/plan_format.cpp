#include "topo/output/plan_format.hpp"

#include <algorithm>

#include "topo/core/cpuset.hpp"
#include "topo/core/strings.hpp"
#include "topo/output/text_table.hpp"

namespace gputopo {

namespace {

std::vector<std::string> pci_strings(const std::vector<PciAddress>& v) {
    std::vector<std::string> out;
    for (const auto& a : v) out.push_back(a.to_string());
    return out;
}

}  // namespace

std::string index_list(const std::vector<int>& values) {
    CpuSet set;  // the same list syntax as a cpulist: "0-3,8"
    for (int x : values) set.set(x);  // negative values are ignored
    return set.to_list();
}

void write_plan_json(JsonWriter& w, const Plan& plan) {
    w.begin_object();
    w.key("schema_version").value(kJsonSchemaVersion);
    w.key("mode").value(mode_name(plan.mode));
    w.key("tasks").begin_array();
    for (const auto& t : plan.tasks) {
        w.begin_object(JsonWriter::Inline);
        w.key("task").value(t.task);
        w.key("gpus").value(t.gpus);
        w.key("gpu_pci").value(pci_strings(t.gpu_pci));
        w.key("cpus").value(t.cpus.to_list());
        w.key("mems").value(index_list(t.mems));
        w.key("nics").value(t.nics);
        w.key("island").value(t.island);
        w.end_object();
    }
    w.end_array();
    w.key("node_nics").value(plan.node_nics);
    w.key("notes").begin_array();
    for (const auto& n : plan.notes) w.value(n);
    w.end_array();
    w.end_object();
}

std::string plan_json(const Plan& plan, int indent) {
    JsonWriter w(indent);
    write_plan_json(w, plan);
    return w.str() + "\n";
}

std::vector<std::vector<std::string>> plan_rows(const Plan& plan) {
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"TASK", "GPUS", "GPU PCI", "CPUS", "MEMS", "NICS", "ISLAND"});
    for (const auto& t : plan.tasks) {
        rows.push_back({std::to_string(t.task), index_list(t.gpus), join_strings(pci_strings(t.gpu_pci), ","),
                        t.cpus.to_list(), index_list(t.mems), join_strings(t.nics, ","),
                        t.island >= 0 ? std::to_string(t.island) : std::string()});
    }
    return rows;
}

std::string plan_table(const Plan& plan, const std::string& host) {
    std::string out = host.empty() ? std::string() : "host: " + host + "   ";
    out += "mode: ";
    out += mode_name(plan.mode);
    out += "   tasks: " + std::to_string(plan.tasks.size());
    out += "   node NICs: " + (plan.node_nics.empty() ? std::string("none") : join_strings(plan.node_nics, ","));
    out += '\n';
    out += text_columns(plan_rows(plan));
    for (const auto& n : plan.notes) out += "note: " + n + "\n";
    return out;
}

}  // namespace gputopo
