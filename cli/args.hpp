// Option parsing shared by the `gputopo` subcommands (cli/cmd_*.cpp).
// Each subcommand declares its options; parse_options accepts "--name VALUE",
// "--name=VALUE" and flags, and throws UsageError with one message naming the
// bad word and what was expected. UsageError means exit status 2.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputopo::cli {

// A command line the CLI cannot accept: the message is shown after "gputopo: ".
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct OptionSpec {
    std::string name;        // "--topology"
    std::string value_name;  // "FILE"; empty for a flag
    std::string help;        // one line for --help
};

struct ParsedArgs {
    bool help = false;                          // --help or -h was given
    std::map<std::string, std::string> values;  // option name -> value ("" for flags)
    bool has(const std::string& name) const { return values.count(name) != 0; }
    std::string get(const std::string& name, const std::string& fallback = "") const;
};

// `command` names the subcommand in messages. Positional words are errors.
// An option given twice is an error (scripts that do so are usually wrong).
ParsedArgs parse_options(const std::string& command, const std::vector<std::string>& args,
                         const std::vector<OptionSpec>& specs);

// "a, b or c"
std::string choice_list(const std::vector<std::string>& items);

// The OPTIONS block of a subcommand's --help.
std::string options_help(const std::vector<OptionSpec>& specs);

// The largest whole number an option takes (9 digits), and the most tasks
// one node runs: Slurm's MaxTasksPerNode may not exceed 65533 (slurm.conf(5)).
constexpr int kMaxCount = 999999999;
constexpr int kMaxTasksPerNode = 65533;

// Value parsers: throw UsageError naming the option, the bad text and what
// was expected.
// A whole number from min_value to max_value (at most 9 digits: 999999999).
int parse_count(const std::string& option, const std::string& text, int min_value, int max_value = kMaxCount);
std::string parse_choice(const std::string& option, const std::string& text, const std::vector<std::string>& choices);
// GPU indices: "0-3", "0,2,5", "1,4-7". Keeps the order given, rejects an
// index listed twice.
std::vector<int> parse_gpu_list(const std::string& option, const std::string& text);

}  // namespace gputopo::cli
