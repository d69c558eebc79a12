#include "cli/args.hpp"

#include <algorithm>
#include <cctype>

#include "topo/core/cpuset.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/suggest.hpp"

namespace gputopo::cli {

std::string ParsedArgs::get(const std::string& name, const std::string& fallback) const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
}

std::string choice_list(const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += (i + 1 == items.size()) ? " or " : ", ";
        out += items[i];
    }
    return out;
}

namespace {

std::vector<std::string> option_names(const std::vector<OptionSpec>& specs) {
    std::vector<std::string> names;
    for (const auto& s : specs) names.push_back(s.name);
    names.push_back("--help");
    return names;
}

const OptionSpec* find_spec(const std::vector<OptionSpec>& specs, const std::string& name) {
    for (const auto& s : specs)
        if (s.name == name) return &s;
    return nullptr;
}

// "unknown option '--topolgy' for 'show' (did you mean --topology?)", or a
// pointer to --help when no option is close.
std::string unknown_option(const std::string& command, const std::string& name, const std::vector<OptionSpec>& specs) {
    const std::string near = nearest_word(name, option_names(specs));
    return "unknown option '" + name + "' for '" + command + "' (" +
           (near.empty() ? "gputopo " + command + " --help lists the options" : "did you mean " + near + "?") + ")";
}

}  // namespace

ParsedArgs parse_options(const std::string& command, const std::vector<std::string>& args,
                         const std::vector<OptionSpec>& specs) {
    ParsedArgs parsed;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            parsed.help = true;
            continue;
        }
        if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
            throw UsageError("unexpected argument '" + arg + "' for '" + command + "' (options start with --; see gputopo " +
                             command + " --help)");
        std::string name = arg;
        std::string value;
        bool inline_value = false;
        size_t eq = arg.find('=');
        if (eq != std::string::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            inline_value = true;
        }
        const OptionSpec* spec = find_spec(specs, name);
        if (!spec) throw UsageError(unknown_option(command, name, specs));
        if (parsed.has(name)) throw UsageError("option '" + name + "' given twice for '" + command + "'");
        if (spec->value_name.empty()) {
            if (inline_value) throw UsageError("option '" + name + "' for '" + command + "' takes no value");
        } else if (!inline_value) {
            if (i + 1 >= args.size())
                throw UsageError("option '" + name + "' for '" + command + "' needs a value (" + name + " " +
                                 spec->value_name + ")");
            value = args[++i];
        }
        parsed.values[name] = value;
    }
    return parsed;
}

std::string options_help(const std::vector<OptionSpec>& specs) {
    std::vector<std::pair<std::string, std::string>> lines;
    size_t width = 0;
    for (const auto& s : specs) {
        std::string left = s.name + (s.value_name.empty() ? "" : " " + s.value_name);
        width = std::max(width, left.size());
        lines.emplace_back(left, s.help);
    }
    lines.emplace_back("--help", "show this help and exit");
    width = std::max<size_t>(width, 6);
    std::string out = "Options:\n";
    for (const auto& l : lines) out += "  " + l.first + std::string(width - l.first.size() + 2, ' ') + l.second + "\n";
    return out;
}

int parse_count(const std::string& option, const std::string& text, int min_value, int max_value) {
    const std::string expected = "expected a whole number from " + std::to_string(min_value) + " to " +
                                 std::to_string(max_value) +
                                 (max_value == kMaxTasksPerNode ? ", Slurm's most tasks per node" : "");
    if (text.empty() || text.size() > 9)
        throw UsageError("bad value '" + text + "' for " + option + " (" + expected + ")");
    for (char c : text)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            throw UsageError("bad value '" + text + "' for " + option + " (" + expected + ")");
    int v = std::stoi(text);
    if (v < min_value || v > max_value)
        throw UsageError("bad value '" + text + "' for " + option + " (" + expected + ")");
    return v;
}

std::string parse_choice(const std::string& option, const std::string& text, const std::vector<std::string>& choices) {
    for (const auto& c : choices)
        if (c == text) return c;
    const std::string near = nearest_word(text, choices);
    throw UsageError("unknown value '" + text + "' for " + option + " (" + (near.empty() ? "" : "did you mean " + near + "? ") +
                     "expected " + choice_list(choices) + ")");
}

std::vector<int> parse_gpu_list(const std::string& option, const std::string& text) {
    const std::string expected = "expected GPU indices such as '0-3' or '0,2,5'";
    std::vector<int> gpus;
    CpuSet seen;
    size_t start = 0;
    if (text.empty()) throw UsageError("empty value for " + option + " (" + expected + ")");
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string piece = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        bool ok = !piece.empty();
        for (char c : piece) ok = ok && (std::isdigit(static_cast<unsigned char>(c)) || c == '-');
        CpuSet set;
        if (ok) {
            try {
                set = CpuSet::parse_list(piece);
            } catch (const ParseError&) {
                ok = false;
            }
        }
        if (!ok || set.empty())
            throw UsageError("bad value '" + text + "' for " + option + ": '" + piece + "' is not a GPU index or range (" +
                             expected + ")");
        if (set.intersects(seen))
            throw UsageError("bad value '" + text + "' for " + option + ": GPU " + std::to_string((set & seen).first()) +
                             " is listed twice");
        seen |= set;
        for (int g : set.to_vector()) gpus.push_back(g);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return gpus;
}

}  // namespace gputopo::cli
