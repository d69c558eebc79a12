// gputopo show: the node's GPUs, NICs, NUMA nodes, the GPU/NIC distance
// matrix (nvidia-smi topo -m vocabulary) and the GPU islands; or a picture of
// the node (svg, dot), with the default plan drawn in it under --plan.
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/output/dot_writer.hpp"
#include "topo/output/svg_writer.hpp"
#include "topo/output/topology_format.hpp"
#include "topo/plan/islands.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> show_options() {
    return {topology_option(), node_option(), picture_format_option(),
            {"--plan", "", "draw the default plan (every GPU, one task each, mode closest) in the svg or dot picture"},
            nic_policy_options()[0], nic_policy_options()[1]};
}

}  // namespace

int cmd_show(const std::vector<std::string>& args, std::ostream& out) {
    const auto specs = show_options();
    ParsedArgs parsed = parse_options("show", args, specs);
    if (parsed.help) {
        out << "usage: gputopo show [--topology FILE | --node NAME] [--format table|json|svg|dot] [--plan]\n"
               "                    [--nic-include LIST] [--nic-exclude LIST]\n\n"
               "Shows the GPUs, NICs and NUMA nodes of this machine (or of FILE), the GPU-GPU and\n"
               "GPU-NIC distance matrix in the vocabulary of `nvidia-smi topo -m` and the GPU islands.\n"
               "svg and dot draw the node; for another plan use `gputopo plan --format svg`.\n\n"
            << options_help(specs);
        return 0;
    }
    const std::string format = picture_format(parsed);
    const bool picture = format == "svg" || format == "dot";
    if (parsed.has("--plan") && !picture)
        throw UsageError("--plan draws the plan into the picture: use it with --format svg or dot (for a table: "
                         "gputopo plan)");
    Node node = load_node(parsed);
    print_warnings(node);
    std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
    if (picture) {
        Plan plan;
        if (parsed.has("--plan")) plan = make_plan(node, default_plan_request(node));
        const Plan* drawn = parsed.has("--plan") ? &plan : nullptr;
        out << (format == "svg" ? topology_svg(node, islands, drawn) : topology_dot(node, islands, drawn));
    } else {
        out << (format == "json" ? topology_json(node, islands) : topology_table(node, islands));
    }
    return 0;
}

}  // namespace gputopo::cli
