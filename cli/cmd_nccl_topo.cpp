// gputopo nccl-topo: writes the node's topology as an NCCL topology file
// (NCCL_TOPO_FILE) for containers and VMs where NCCL cannot see the real PCI
// tree or NVLinks. Without --topology: this machine, hwloc refined by NVML
// and NIC port state.
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/output/nccl_topo_writer.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> nccl_topo_options() {
    return {{"--topology", "FILE", "read an hwloc XML or NCCL/RCCL topology XML file instead of this machine"},
            {"--output", "FILE", "where to write the NCCL topology XML ('-' for standard output); also -o FILE"}};
}

}  // namespace

int cmd_nccl_topo(const std::vector<std::string>& raw, std::ostream& out) {
    std::vector<std::string> args;
    for (const auto& a : raw) args.push_back(a == "-o" ? "--output" : a);
    const auto specs = nccl_topo_options();
    ParsedArgs parsed = parse_options("nccl-topo", args, specs);
    if (parsed.help) {
        out << "usage: gputopo nccl-topo [--topology FILE] -o FILE\n\n"
               "Writes this machine's topology (or FILE's) as an NCCL topology file: <system version=\"1\">\n"
               "with cpu, pci, gpu, nvlink, nic and net elements, lowercase bus ids. Point NCCL at it with\n"
               "NCCL_TOPO_FILE=FILE in containers and VMs where NCCL cannot see the PCI tree or NVLinks.\n\n"
            << options_help(specs);
        return 0;
    }
    if (!parsed.has("--output"))
        throw UsageError("nccl-topo needs -o FILE (the NCCL topology file to write; '-' for standard output)");
    const std::string output = parsed.get("--output");
    if (output.empty()) throw UsageError("empty value for -o/--output (expected a file name or '-')");
    Node node = load_node(parsed);
    print_warnings(node);
    if (output == "-")
        out << nccl_topology_xml(node);
    else
        write_nccl_topology_file(node, output);
    return 0;
}

}  // namespace gputopo::cli
