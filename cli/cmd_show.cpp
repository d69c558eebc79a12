// gputopo show: the node's GPUs, NICs, NUMA nodes, the GPU/NIC distance
// matrix (nvidia-smi topo -m vocabulary) and the GPU islands.
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/plan/islands.hpp"
#include "topo/output/topology_format.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> show_options() { return {topology_option(), format_option()}; }

}  // namespace

int cmd_show(const std::vector<std::string>& args, std::ostream& out) {
    const auto specs = show_options();
    ParsedArgs parsed = parse_options("show", args, specs);
    if (parsed.help) {
        out << "usage: gputopo show [--topology FILE] [--format table|json]\n\n"
               "Shows the GPUs, NICs and NUMA nodes of this machine (or of FILE), the GPU-GPU and\n"
               "GPU-NIC distance matrix in the vocabulary of `nvidia-smi topo -m` and the GPU islands.\n\n"
            << options_help(specs);
        return 0;
    }
    const bool json = want_json(parsed);
    Node node = load_node(parsed);
    std::vector<int> islands = node.gpus.empty() ? std::vector<int>{} : gpu_islands(node);
    out << (json ? topology_json(node, islands) : topology_table(node, islands));
    return 0;
}

}  // namespace gputopo::cli
