// gputopo plan: the binding the plugin would apply to the local tasks of one
// node for an allocation of GPUs (the planner, topo/plan/planner.hpp).
#include <iostream>
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/core/errors.hpp"
#include "topo/output/dot_writer.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/output/svg_writer.hpp"
#include "topo/plan/islands.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"
#include "topo/plan/fabric_env.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> plan_options() {
    return {topology_option(), node_option(),
            {"--gpus", "LIST", "allocated GPU indices (PCI bus-id order), e.g. 0-3 or 0,2,5; '' or none: no GPUs "
                               "(default: every GPU)"},
            {"--ntasks", "N", "local tasks (default: allocated GPUs / --gpus-per-task, or one per GPU)"},
            {"--gpus-per-task", "K", "GPUs per task (default: allocated GPUs / tasks)"},
            {"--cpus", "CPULIST", "CPUs the step may use, e.g. 0-31,64-95 (default: every CPU)"},
            {"--cpus-per-task", "N", "CPUs per task, as srun -c N gives the plugin (default: each task's whole share)"},
            {"--mode", "none|closest|island", "binding mode (default: closest)"},
            {"--whole-cores", "", "more tasks than cores local to their GPUs: whole cores elsewhere, not hardware threads"},
            {"--env", "", "also print each task's environment variables, as the plugin sets them (table format)"},
            nic_policy_options()[0],
            nic_policy_options()[1],
            picture_format_option()};
}

// "task 0: NAME=VALUE", every variable the plugin would set (topo/plan/task_env.hpp);
// with -c N one OpenMP place per CPU, as the plugin sets them (step/step_binding.cpp).
void print_task_env(const Node& node, const Plan& plan, const PlanRequest& req, std::ostream& out) {
    TaskEnvOptions eo;
    eo.omp_per_thread = req.cpus_per_task > 0;
    for (size_t t = 0; t < plan.tasks.size(); ++t)
        for (const auto& v : task_env(node, plan, static_cast<int>(t), eo))
            out << "task " << t << ": " << v.name << "=" << v.value << "\n";
}

const char* const kUsage =
    "usage: gputopo plan [--topology FILE | --node NAME] [--gpus LIST] [--ntasks N] [--gpus-per-task K]\n"
    "                    [--cpus CPULIST] [--cpus-per-task N] [--mode none|closest|island] [--whole-cores]\n"
    "                    [--env] [--nic-include LIST] [--nic-exclude LIST]\n"
    "                    [--format table|json|svg|dot]\n\n"
    "Prints, per local task, the GPUs, CPUs, memory NUMA nodes, NICs and island the plugin\n"
    "would bind it to, and the node-wide NIC list (NCCL_IB_HCA); svg and dot draw the node\n"
    "with each task's GPUs, CPU cores and NICs in the task's colour.\n\n";

}  // namespace

int cmd_plan(const std::vector<std::string>& args, std::ostream& out) {
    const auto specs = plan_options();
    ParsedArgs parsed = parse_options("plan", args, specs);
    if (parsed.help) {
        out << kUsage << options_help(specs);
        return 0;
    }

    // Check the whole command line before reading the topology.
    PlanRequest req;
    const std::string format = picture_format(parsed);
    req.mode = parse_mode(parse_choice("--mode", parsed.get("--mode", "closest"), {"none", "closest", "island"}));
    req.whole_cores = parsed.has("--whole-cores");
    std::vector<int> gpus;
    // '' or 'none': a step without GPUs (CPUs and memory only), as Slurm runs it.
    const bool no_gpus = parsed.has("--gpus") && (parsed.get("--gpus").empty() || parsed.get("--gpus") == "none");
    if (parsed.has("--gpus") && !no_gpus) gpus = parse_gpu_list("--gpus", parsed.get("--gpus"));
    if (parsed.has("--ntasks")) req.ntasks = parse_count("--ntasks", parsed.get("--ntasks"), 1, kMaxTasksPerNode);
    if (parsed.has("--gpus-per-task")) req.gpus_per_task = parse_count("--gpus-per-task", parsed.get("--gpus-per-task"), 1);
    if (parsed.has("--cpus-per-task")) req.cpus_per_task = parse_count("--cpus-per-task", parsed.get("--cpus-per-task"), 1);
    if (parsed.has("--cpus")) {
        try {
            req.allowed_cpus = CpuSet::parse_list(parsed.get("--cpus"));
        } catch (const ParseError& e) {
            throw UsageError(std::string("--cpus: ") + e.what());
        }
        if (req.allowed_cpus->empty()) throw UsageError("empty value for --cpus (expected a cpulist such as 0-31,64-95)");
    }

    Node node = load_node(parsed);
    print_warnings(node);
    const std::string where = node.source.empty() ? std::string("the node") : node.source;
    if (parsed.has("--gpus")) {
        for (int g : gpus)
            if (static_cast<size_t>(g) >= node.gpus.size())
                throw UsageError("GPU " + std::to_string(g) + " in --gpus '" + parsed.get("--gpus") + "' is not on " +
                                 where + " (it has " +
                                 (node.gpus.empty() ? std::string("no GPUs")
                                                    : "GPUs 0-" + std::to_string(node.gpus.size() - 1)) +
                                 ")");
    } else {
        gpus = default_plan_request(node).gpus;
    }
    req.gpus = gpus;
    if (req.allowed_cpus && !req.allowed_cpus->intersects(node.cpus))
        throw UsageError("--cpus '" + parsed.get("--cpus") + "' names no CPU of " + where + " (it has CPUs " +
                         node.cpus.to_list() + ")");
    if (!parsed.has("--ntasks")) {
        int n = static_cast<int>(gpus.size());
        if (req.gpus_per_task > 0) n /= req.gpus_per_task;
        req.ntasks = n > 0 ? n : 1;
    }

    Plan plan = make_plan(node, req);
    if (format == "svg" || format == "dot") {
        const std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
        out << (format == "svg" ? topology_svg(node, islands, &plan) : topology_dot(node, islands, &plan));
    } else {
        out << (format == "json" ? plan_json(plan) : plan_table(plan, node.hostname));
        if (format == "table" && parsed.has("--env")) print_task_env(node, plan, req, out);
    }
    for (const auto& w : unnamed_nic_warnings(node, plan)) std::cerr << "gputopo: warning: " << w << "\n";
    return 0;
}

}  // namespace gputopo::cli
