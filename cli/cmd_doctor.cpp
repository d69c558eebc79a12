// gputopo doctor: preflight of this node (GPUs, NVLinks, NVLink fabric, NIC
// ports, NUMA affinity, GPU health), against a reference topology when one is
// given. Exit status 0 when no check failed, 1 when one did, 2 for a bad
// command line or a reference that cannot be read (a mistyped --expect is the
// site's mistake, not the node's: the health-check wrapper drains on 1 only):
// usable as Slurm's HealthCheckProgram (through a wrapper that
// drains the node, see gputopo(1)) and as a job prolog.
#include <cstdlib>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/args.hpp"
#include "cli/input.hpp"
#include "cli/commands.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/strings.hpp"
#include "topo/doctor.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> doctor_options() {
    return {{"--expect", "FILE", "reference topology of a healthy node of this type (hwloc XML, NCCL XML, "
                                 "the plugin's cache file or `gputopo nccl-topo` output)"},
            {"--topology", "FILE", "check FILE as this node's hwloc view instead of live discovery (offline use)"},
            {"--format", "table|json", "output format (default: table)"},
            {"--nvml-library", "PATH", "NVML library to load (default: $GPUTOPO_NVML_LIBRARY or libnvidia-ml.so.1)"},
            {"--sysfs-root", "DIR", "read NIC state under DIR/sys/class/infiniband (default: /)"},
            {"--storage-nics", "LIST", "comma-separated NICs (RDMA device, netdev or PCI bus id) reserved for storage"},
            nic_policy_options()[0], nic_policy_options()[1],
            {"--mnnvl", "", "also check what NCCL needs for multi-node NVLink (NVL72): IMEX channel, fabric state "
                            "and health, cliques, NCCL_CUMEM_ENABLE / NCCL_MNNVL_ENABLE"},
            {"--imex-channels", "DIR", "with --mnnvl: where the job's IMEX channels are (default "
                                       "/dev/nvidia-caps-imex-channels)"},
            {"--clique", "LIST", "with --mnnvl: other nodes' CLUSTERUUID/CLIQUE (comma-separated) this node's must "
                                 "equal (gputopo labels --clique prints them)"}};
}

// The reference is read here, before any check: one that cannot be read or
// parsed is a usage error (exit 2), never a failed check (exit 1).
std::optional<Node> load_reference(const std::string& path) {
    if (path.empty()) return std::nullopt;
    try {
        return load_topology_file(path);
    } catch (const std::exception& e) {
        throw UsageError(std::string("--expect: ") + e.what());
    }
}

}  // namespace

int cmd_doctor(const std::vector<std::string>& args, std::ostream& out) {
    const auto specs = doctor_options();
    ParsedArgs parsed = parse_options("doctor", args, specs);
    if (parsed.help) {
        out << "usage: gputopo doctor [--expect FILE] [--format table|json] [--topology FILE]\n"
               "                      [--nvml-library PATH] [--sysfs-root DIR] [--storage-nics LIST]\n"
               "                      [--nic-include LIST] [--nic-exclude LIST]\n"
               "                      [--mnnvl [--imex-channels DIR] [--clique LIST]]\n\n"
               "Checks this node before jobs run on it: NVML answers, every GPU is visible, NVLinks are up\n"
               "(as in FILE), multi-node NVLink registration is complete, RDMA NIC ports are ACTIVE at the\n"
               "expected rate, GPU NUMA affinity is sane, no uncorrectable ECC error or failed row remap.\n"
               "Exit status: 0 no check failed (warnings allowed), 1 a check failed, 2 a bad command line\n"
               "or a reference FILE that cannot be read.\n\n"
            << options_help(specs);
        return 0;
    }
    const std::string format = parse_choice("--format", parsed.get("--format", "table"), {"table", "json"});
    DoctorInputs in;
    for (const char* o : {"--expect", "--topology", "--nvml-library", "--sysfs-root"})
        if (parsed.has(o) && parsed.get(o).empty())
            throw UsageError(std::string("empty value for ") + o);
    in.expected = load_reference(parsed.get("--expect"));
    in.base_topology_file = parsed.get("--topology");
    in.live = live_sources_from_environment();
    if (parsed.has("--nvml-library")) in.live.nvml_library = parsed.get("--nvml-library");
    in.live.sysfs_root = parsed.get("--sysfs-root");
    in.live.storage_nics = split_nonempty(parsed.get("--storage-nics"), ',');
    in.nic_policy = nic_policy(parsed);
    in.mnnvl = parsed.has("--mnnvl");
    for (const char* o : {"--imex-channels", "--clique"})
        if (parsed.has(o) && !in.mnnvl) throw UsageError(std::string(o) + " needs --mnnvl");
    if (parsed.has("--imex-channels") && parsed.get("--imex-channels").empty())
        throw UsageError("empty value for --imex-channels");
    in.imex_dir = parsed.get("--imex-channels");
    in.peers = split_nonempty(parsed.get("--clique"), ',');
    if (const char* v = std::getenv(env::kNcclCumemEnable)) in.nccl_cumem_enable = v;
    if (const char* v = std::getenv(env::kNcclMnnvlEnable)) in.nccl_mnnvl_enable = v;
    DoctorReport report = run_doctor(in);
    if (parsed.has("--expect")) report.reference = parsed.get("--expect");
    out << (format == "json" ? doctor_json(report) : doctor_table(report));
    return report.exit_code();
}

}  // namespace gputopo::cli
