// Rendering a Plan as the text people read and the JSON scripts read. Pure:
// the CLI (`gputopo plan`), the plugin's verbose output and the launcher's
// --dry-run all print plans through these functions.
//
// JSON (field names are an interface: scripts and the plugin's tests read them):
//   {"schema_version": 1, "mode": "island",
//    "tasks": [{"task": 0, "gpus": [3], "gpu_pci": ["0000:5d:00.0"], "cpus": "14-27,126-139",
//               "mems": "1", "nics": ["mlx5_2"], "island": 0}, ...],
//    "node_nics": ["mlx5_0", ...],
//    "notes": ["..."]}
// `cpus` is a cpulist of OS PU indices, `mems` a list of NUMA node OS indices
// ("" in mode none), `island` is -1 in mode none. cpus and mems are given only
// as cpulist strings, the form taskset -c, numactl, Slurm and
// /proc/PID/status (Cpus_allowed_list) use; man gputopo(1) shows how to expand one.
#pragma once

#include <string>
#include <vector>

#include "topo/output/json_writer.hpp"
#include "topo/plan/planner.hpp"

namespace gputopo {

// Non-negative integers as a compact list, "0-3,5" (sorted, duplicates merged).
std::string index_list(const std::vector<int>& values);

// Writes the plan object into `w` (at a value position).
void write_plan_json(JsonWriter& w, const Plan& plan);
// The plan as a JSON document, indented (`indent` 0: one line), newline-terminated.
std::string plan_json(const Plan& plan, int indent = 2);

// The task table: a header row (TASK GPUS "GPU PCI" CPUS MEMS NICS ISLAND)
// and one row per task; empty cells where a task has none. Shared by the text
// table and the SVG picture's legend.
std::vector<std::vector<std::string>> plan_rows(const Plan& plan);

// A header line ("host: H   mode: M   tasks: N   node NICs: ..."; no host
// part when `host` is empty), one aligned line per task, then one "note:" line
// per note.
std::string plan_table(const Plan& plan, const std::string& host = "");

}  // namespace gputopo
