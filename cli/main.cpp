// gputopo: show a node's GPU/NIC/CPU topology and the binding plan the
// SPANK plugin would apply. One file per subcommand (cmd_*.cpp); this file
// holds the subcommand table, the global options and the exit-status rules:
//   0 success, 1 a topology or plan that cannot be used, 2 a bad command line.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/suggest.hpp"
#include "topo/core/version.hpp"

namespace {

using gputopo::cli::Command;

// Add a subcommand here (and its cmd_NAME.cpp + declaration in commands.hpp).
const Command kCommands[] = {
    {"show", "the node's GPUs, NICs, NUMA nodes, GPU/NIC distance matrix and islands", gputopo::cli::cmd_show},
    {"plan", "the per-task binding (GPUs, CPUs, memory, NICs, island) for an allocation", gputopo::cli::cmd_plan},
    {"ranks", "island-ordered ranks of a step across nodes (--nodes, --islands)", gputopo::cli::cmd_ranks},
    {"nccl-topo", "write the node's topology as an NCCL topology file (NCCL_TOPO_FILE)", gputopo::cli::cmd_nccl_topo},
    {"labels", "Kubernetes node labels of the islands (Topograph's keys) for Kueue/KAI topology-aware scheduling", gputopo::cli::cmd_labels},
    {"doctor", "preflight of this node: GPUs, NVLinks, NIC ports, NUMA affinity, GPU health", gputopo::cli::cmd_doctor},
    {"run", "in a batch script: the step with hot spares, in-job restart on failure, hang detection", gputopo::cli::cmd_run},
};

std::vector<std::string> command_names() {
    std::vector<std::string> names;
    for (const auto& c : kCommands) names.push_back(c.name);
    names.push_back("help");
    return names;
}

void print_usage(std::ostream& out) {
    out << "usage: gputopo <command> [options]\n"
           "       gputopo <command> --help\n"
           "       gputopo --version\n\n"
           "Commands:\n";
    size_t width = 4;
    for (const auto& c : kCommands) width = std::max(width, std::strlen(c.name));
    for (const auto& c : kCommands)
        out << "  " << c.name << std::string(width - std::strlen(c.name) + 2, ' ') << c.summary << "\n";
    out << "  help" << std::string(width - 4 + 2, ' ') << "this help, or a command's: gputopo help COMMAND\n\n"
        << "Exit status: 0 success, 1 a topology or plan gputopo cannot use, 2 a bad command line.\n"
        << "See gputopo(1).\n";
}

const Command* find_command(const std::string& name) {
    for (const auto& c : kCommands)
        if (name == c.name) return &c;
    return nullptr;
}

gputopo::cli::UsageError unknown_command(const std::string& name) {
    const std::string near = gputopo::nearest_word(name, command_names());
    return gputopo::cli::UsageError("unknown command '" + name + "' (" +
                                    (near.empty() ? "expected " + gputopo::cli::choice_list(command_names())
                                                  : "did you mean " + near + "?") +
                                    ")");
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) {
        print_usage(std::cerr);
        return 2;
    }
    const std::string& first = args[0];
    if (first == "--help" || first == "-h") {
        print_usage(std::cout);
        return 0;
    }
    if (first == "--version" || first == "-V") {
        std::cout << "gputopo " << gputopo::kVersion << "\n";
        return 0;
    }
    if (first == "help") {
        if (args.size() == 1) {
            print_usage(std::cout);
            return 0;
        }
        if (args.size() > 2)
            throw gputopo::cli::UsageError("'help' takes one command name (expected e.g. 'gputopo help plan')");
        const Command* c = find_command(args[1]);
        if (!c) throw unknown_command(args[1]);
        return c->run({"--help"}, std::cout);
    }
    if (first.size() > 1 && first[0] == '-')
        throw gputopo::cli::UsageError("unknown option '" + first + "' (expected a command: " +
                                       gputopo::cli::choice_list(command_names()) + "; or --help, --version)");
    const Command* c = find_command(first);
    if (!c) throw unknown_command(first);
    return c->run(std::vector<std::string>(args.begin() + 1, args.end()), std::cout);
}

// Library exceptions carry no prefix: the CLI adds it where it prints.
std::string user_message(const char* what) { return std::string("gputopo: ") + what; }

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    try {
        int rc = run(args);
        std::cout.flush();
        if (!std::cout) {
            std::cerr << "gputopo: cannot write the output\n";
            return 1;
        }
        return rc;
    } catch (const gputopo::cli::UsageError& e) {
        std::cerr << user_message(e.what()) << "\n";
        return 2;
    } catch (const std::exception& e) {  // TopologyError, PlanError, ParseError, I/O
        std::cerr << user_message(e.what()) << "\n";
        return 1;
    }
}
