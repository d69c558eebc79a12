// The `gputopo` subcommands. Each lives in its own file cli/cmd_NAME.cpp
// and is listed once in the table in cli/main.cpp. A subcommand writes
// its result to `out`, throws cli::UsageError for a bad command line (exit 2)
// and TopologyError / PlanError for inputs it cannot use (exit 1), prints its
// own help for --help and returns its exit status.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gputopo::cli {

using CommandFn = int (*)(const std::vector<std::string>& args, std::ostream& out);

struct Command {
    const char* name;
    const char* summary;  // one line for `gputopo --help`
    CommandFn run;
};

int cmd_show(const std::vector<std::string>& args, std::ostream& out);
int cmd_plan(const std::vector<std::string>& args, std::ostream& out);
int cmd_ranks(const std::vector<std::string>& args, std::ostream& out);
int cmd_nccl_topo(const std::vector<std::string>& args, std::ostream& out);
int cmd_doctor(const std::vector<std::string>& args, std::ostream& out);
int cmd_labels(const std::vector<std::string>& args, std::ostream& out);
int cmd_run(const std::vector<std::string>& args, std::ostream& out);

}  // namespace gputopo::cli
