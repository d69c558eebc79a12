#include "step/option_parser.hpp"

#include <vector>

#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/core/suggest.hpp"
#include "topo/fabric/parallel_layout.hpp"

namespace gputopo::step {

namespace {

const char* kChoices = "expected none, closest or island; flags: verbose, strict, isolate, share, membind, wholecores, noframework, help";

const std::vector<std::string> kModes = {"none", "closest", "island", "help"};
const std::vector<std::string> kFlags = {"verbose",    "strict",      "isolate", "share", "membind",
                                         "wholecores", "noframework", "help"};

// "(did you mean closest? expected ...)" when a known word is near, else "(expected ...)".
std::string hint(const std::string& word, const std::vector<std::string>& known) {
    const std::string near = nearest_word(word, known);
    return std::string(" (") + (near.empty() ? "" : "did you mean " + near + "? ") + kChoices + ")";
}

// A first word that is (near) a flag: the mode is missing, "did you mean closest,verbose?".
std::string mode_hint(const std::string& word) {
    const std::string flag = nearest_word(word, kFlags);
    if (!nearest_word(word, kModes).empty() || flag.empty()) return hint(word, kModes);
    return " (a mode comes first: did you mean closest," + flag + "? " + kChoices + ")";
}

// "closest, verbose" is "closest,verbose": blanks around a comma are not part of a word.
std::vector<std::string> words_of(const std::string& value) {
    std::vector<std::string> words = split_fields(value, ',');
    for (std::string& w : words) {
        size_t a = w.find_first_not_of(" \t");
        w = a == std::string::npos ? "" : w.substr(a, w.find_last_not_of(" \t") - a + 1);
    }
    return words;
}

bool mode_from_word(const std::string& w, Mode& m) {
    if (w == "none") m = Mode::None;
    else if (w == "closest") m = Mode::Closest;
    else if (w == "island") m = Mode::Island;
    else return false;
    return true;
}

}  // namespace

Options parse_gpu_topo(const std::string& value, const std::string& where) {
    // A newline or another control character (possible through the API) would
    // start a forged line wherever the value is logged: refused, shown escaped
    // (a tab is a blank around the commas).
    for (char c : value)
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
            throw ParseError("a control character in " + where + printable(value) + " (" + kChoices + ")");
    const std::string input = where + value;
    if (value.empty()) throw ParseError("empty value in " + input + " (" + kChoices + ")");
    std::vector<std::string> words = words_of(value);
    Options o;
    size_t first_flag = 1;
    if (words[0] == "help") {
        o.help = true;
    } else if (!mode_from_word(words[0], o.mode)) {
        throw ParseError("unknown mode '" + words[0] + "' in " + input + mode_hint(words[0]));
    }
    for (size_t i = first_flag; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (w == "verbose") o.verbose = true;
        else if (w == "strict") o.strict = true;
        else if (w == "isolate") o.isolate = true;
        else if (w == "share") o.share = true;
        else if (w == "membind") o.membind = true;
        else if (w == "wholecores") o.whole_cores = true;
        else if (w == "noframework") o.framework = false;
        else if (w == "help") o.help = true;
        else if (w.size() > 3 && (w.compare(0, 3, "tp=") == 0 || w.compare(0, 3, "cp=") == 0 || w.compare(0, 3, "ep=") == 0 ||
                                  w.compare(0, 3, "dp=") == 0 || w.compare(0, 3, "pp=") == 0 || w.compare(0, 6, "order=") == 0))
            o.layout += (o.layout.empty() ? "" : ",") + w;
        else if (w.compare(0, 7, "nvlink=") == 0)
            o.nvlink_domain = w.substr(7);
        else if (w.empty())
            throw ParseError("empty word in " + input + " (" + kChoices + ")");
        else {
            Mode ignored;
            if (mode_from_word(w, ignored))
                throw ParseError("a second mode '" + w + "' in " + input + " (one mode first, then flags: verbose, strict, isolate, share, membind, wholecores, noframework, help)");
            throw ParseError("unknown flag '" + w + "' in " + input + hint(w, kFlags));
        }
    }
    if (o.isolate && o.share)
        throw ParseError("flags 'isolate' and 'share' exclude each other in " + input);
    if (!o.layout.empty()) {
        if (o.mode != Mode::Island)
            throw ParseError("a parallel layout (" + o.layout + ") needs mode island in " + input);
        try {
            (void)ParallelLayout::parse(o.layout);
        } catch (const ParseError& e) {
            throw ParseError(std::string(e.what()) + " in " + input);
        }
    }
    if (!o.nvlink_domain.empty()) {
        if (o.layout.empty())
            throw ParseError("nvlink=" + o.nvlink_domain + " needs a parallel layout (tp=..,pp=..) in " + input);
        try {
            (void)parse_nvlink_domain(o.nvlink_domain);
        } catch (const ParseError& e) {
            throw ParseError(std::string(e.what()) + " in " + input);
        }
    }
    return o;
}

std::string to_string(const Options& o) {
    std::string s = mode_name(o.mode);
    if (o.verbose) s += ",verbose";
    if (o.strict) s += ",strict";
    if (o.isolate) s += ",isolate";
    if (o.share) s += ",share";
    if (o.membind) s += ",membind";
    if (o.whole_cores) s += ",wholecores";
    if (!o.framework) s += ",noframework";
    if (o.help) s += ",help";
    if (!o.layout.empty()) s += "," + o.layout;
    if (!o.nvlink_domain.empty()) s += ",nvlink=" + o.nvlink_domain;
    return s;
}

std::string help_text() {
    return "gputopo: --gpu-topo=MODE[,FLAG...] binds each task to its GPUs, the nearest NIC(s),\n"
           "gputopo: the CPU cores of their NUMA node, and prefers that node's memory.\n"
           "gputopo: modes:\n"
           "gputopo:   none     no binding (gputopo stays out)\n"
           "gputopo:   closest  each task gets the CPUs, memory and NIC nearest to its GPU(s)\n"
           "gputopo:   island   as closest, and consecutive tasks share an NVLink/PCIe island\n"
           "gputopo: flags:\n"
           "gputopo:   verbose  print one line per task with its binding\n"
           "gputopo:   strict   fail the step when the binding cannot be applied\n"
           "gputopo:   isolate  each task sees only its own GPU(s) in CUDA_VISIBLE_DEVICES\n"
           "gputopo:   share    every task sees all the step's GPUs (default for one GPU per task)\n"
           "gputopo:   membind  allocate memory only on the GPUs' NUMA node(s) (strict; default: preferred)\n"
           "gputopo:   wholecores  more tasks than cores near their GPUs: whole cores further away\n"
           "gputopo:            instead of the near cores' hardware threads (the default)\n"
           "gputopo:   noframework  do not set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,\n"
           "gputopo:            NODE_RANK, MASTER_ADDR, MASTER_PORT, ... (set by default, never over the user's)\n"
           "gputopo:   help     print this text\n"
           "gputopo: island with a parallel layout: tp=N[,cp=N,ep=N,dp=N,pp=N,order=tp-cp-ep-dp-pp]\n"
           "gputopo:            RANK places TP/CP/EP groups inside NVLink domains, DP/PP across few islands\n"
           "gputopo:   nvlink=node|island|N  the layout's NVLink domain: a node (default), an island\n"
           "gputopo:            (NVL72 racks), or N consecutive GPUs of a node\n"
           "gputopo: example: srun --gpus-per-task=1 --gpu-topo=island,verbose ./app\n";
}

}  // namespace gputopo::step
