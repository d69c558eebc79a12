// The man pages (man/*.[158]) against the code: every option, flag, key and
// environment variable the code accepts, sets or reads is documented, and
// nothing documented is gone; the pages follow man-pages(7) (one .TH form,
// section order, one tagged entry per launcher option) and lexgrog reads each
// NAME line (so apropos/whatis index them).
//
// The lists come from the code, not from this file: the launcher's option
// table (option_keys), the plugstack key table (plugstack_keys), the messages
// that list --gpu-topo's modes and flags and gputopo.conf's keys, the CLI's own
// --help for every command it lists, and the variable names in the sources.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "launcher/options/options.hpp"
#include "spank/plugstack_args.hpp"
#include "step/option_parser.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/island_sources.hpp"

namespace fs = std::filesystem;

namespace {

struct Page {
    std::string path, name, section;  // "man/gputopo-launch.1", "gputopo-launch", "1"
    std::vector<std::string> lines;   // raw roff
    std::string text;                 // readable: escapes and font changes removed
};

// roff to plain text, enough to search it: \- to -, font changes and \& dropped.
std::string plain(const std::string& roff) {
    std::string s = std::regex_replace(roff, std::regex(R"(\\f[BIRP])"), "");
    s = std::regex_replace(s, std::regex(R"(\\f\[[A-Z]*\])"), "");
    s = std::regex_replace(s, std::regex(R"(\\-)"), "-");
    s = std::regex_replace(s, std::regex(R"(\\&)"), "");
    s = std::regex_replace(s, std::regex(R"(\\e)"), "\\");
    return s;
}

std::vector<Page> man_pages() {
    std::vector<Page> pages;
    for (const auto& e : fs::directory_iterator(gputopo_test::source_dir() + "/man")) {
        const std::string file = e.path().filename().string();
        const auto dot = file.rfind('.');
        if (dot == std::string::npos) continue;
        const std::string sec = file.substr(dot + 1);
        if (sec != "1" && sec != "5" && sec != "8") continue;
        Page p{e.path().string(), file.substr(0, dot), sec, {}, ""};
        std::istringstream in(gputopo_test::slurp(p.path));
        for (std::string line; std::getline(in, line);) {
            p.lines.push_back(line);
            p.text += plain(line) + "\n";
        }
        pages.push_back(p);
    }
    std::sort(pages.begin(), pages.end(), [](const Page& a, const Page& b) { return a.path < b.path; });
    return pages;
}

const std::vector<Page>& pages() {
    static const auto all = man_pages();
    return all;
}

const Page& page(const std::string& name) {
    for (const auto& p : pages())
        if (p.name + "." + p.section == name) return p;
    FAIL("no man page " << name);
    throw std::logic_error("unreachable");
}

std::string all_text() {
    std::string t;
    for (const auto& p : pages()) t += p.text;
    return t;
}

// The tag lines of .TP entries (the line after .TP or .TQ), as plain text.
std::vector<std::string> tags(const Page& p) {
    std::vector<std::string> out;
    for (size_t i = 0; i + 1 < p.lines.size(); ++i)
        if (p.lines[i] == ".TP" || p.lines[i] == ".TQ") out.push_back(plain(p.lines[i + 1]));
    return out;
}

// The words of a tag line once its macro (.B, .BI, .BR, ...) and quotes are gone.
std::string tag_text(const std::string& tag) {
    std::string s = std::regex_replace(tag, std::regex(R"(^\.[A-Z]+ )"), "");
    s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
    return s;
}

std::set<std::string> words_matching(const std::string& text, const std::regex& re, int group = 0) {
    std::set<std::string> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        out.insert((*it)[group].str());
    return out;
}

// Text of the files under `dirs` (relative to the source tree) with one of `exts`.
std::string source_text(const std::vector<std::string>& dirs, const std::set<std::string>& exts) {
    std::string t;
    for (const auto& dir : dirs)
        for (const auto& e : fs::recursive_directory_iterator(gputopo_test::source_dir() + "/" + dir)) {
            if (e.is_regular_file() && exts.count(e.path().extension().string()))
                t += gputopo_test::slurp(e.path().string()) + "\n";
        }
    return t;
}

// "GPUTOPO_LAUNCH_MAX_RESTARTS" is the launcher's option max-restarts.
bool launcher_option_variable(const std::string& v) {
    const std::string prefix = "GPUTOPO_LAUNCH_";
    if (v.rfind(prefix, 0) != 0) return false;
    std::string key = v.substr(prefix.size());
    for (auto& c : key) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto keys = gputopo::launch::option_keys();
    return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Environment variables named in the sources: every quoted name in the code
// with one of the prefixes gputopo reads or sets, and every GPUTOPO_ variable
// of the shipped scripts (etc/).
std::set<std::string> code_variables() {
    const std::string code = source_text({"topo", "step", "spank", "launcher", "cli"}, {".cpp", ".hpp"});
    const std::string scripts = source_text({"etc"}, {".sh", ".lua"});
    auto vars = words_matching(
        code, std::regex(R"re("((?:GPUTOPO|NCCL|UCX|CUDA|ROCR|HIP|SLURM|SLURMD|TORCHELASTIC|GLOO|PET|OMPI)_[A-Z0-9_]*[A-Z0-9])")re"), 1);
    for (const auto& v : words_matching(scripts, std::regex(R"(\bGPUTOPO_[A-Z0-9_]*[A-Z0-9]\b)"))) vars.insert(v);
    // The names in topo/core/env_names.hpp (framework variables without a prefix too).
    for (const auto& v : words_matching(gputopo_test::slurp(gputopo_test::source_dir() + "/topo/core/env_names.hpp"),
                                        std::regex(R"re(= "([A-Z][A-Z0-9_]*)")re"), 1))
        vars.insert(v);
    return vars;
}

// "expected none, closest or island; flags: verbose, strict, isolate, share, help" -> the words.
std::set<std::string> gpu_topo_words() {
    std::string msg;
    try {
        gputopo::step::parse_gpu_topo("not-a-mode");
    } catch (const gputopo::ParseError& e) {
        msg = e.what();
    }
    REQUIRE(msg.find("expected ") != std::string::npos);
    msg = msg.substr(msg.find("expected ") + 9);
    msg = std::regex_replace(msg, std::regex(R"(flags:|\bor\b|[,;()])"), " ");
    std::set<std::string> words;
    std::istringstream in(msg);
    for (std::string w; in >> w;) words.insert(w);
    return words;
}

// The keys gputopo.conf accepts, from the message for an unknown key.
std::set<std::string> island_conf_keys() {
    std::string msg;
    try {
        gputopo::IslandMap map;
        std::vector<std::string> confs;
        gputopo::parse_island_conf("NoSuchKey=1\n", "x.conf", map, &confs);
    } catch (const std::exception& e) {
        msg = e.what();
    }
    REQUIRE(msg.find("unknown key") != std::string::npos);
    msg = msg.substr(msg.find("expected"));
    return words_matching(msg, std::regex(R"('([A-Za-z]+)=)"), 1);
}

bool have(const std::string& tool) { return access(tool.c_str(), X_OK) == 0; }

}  // namespace

TEST_CASE("man pages: lexgrog reads each page's NAME, which names the page", "[man]") {
    REQUIRE(pages().size() >= 5);
    if (!have("/usr/bin/lexgrog")) {
        WARN("lexgrog (man-db) is not installed: NAME lines checked by hand only (make test-deps installs it)");
    }
    for (const auto& p : pages()) {
        INFO(p.path);
        // The NAME section is one line "name \- description" whose name is the page's.
        auto at = std::find(p.lines.begin(), p.lines.end(), ".SH NAME");
        REQUIRE(at != p.lines.end());
        REQUIRE(at + 1 != p.lines.end());
        CHECK(plain(at[1]).rfind(p.name + " - ", 0) == 0);
        if (!have("/usr/bin/lexgrog")) continue;
        auto r = gputopo_test::run_cli("/usr/bin/lexgrog", {p.path});
        CHECK(r.rc == 0);
        CHECK(r.out.find(p.path + ": \"" + p.name + " - ") == 0);
    }
}

// Every page as a reader sees it: man(1) with all of groff's warnings, at the
// widths of a terminal (80) and of man's own default when it cannot ask (78);
// any warning ("cannot adjust line", an unknown macro, a missing argument) fails.
TEST_CASE("man pages: man --warnings renders every page without a warning", "[man]") {
    REQUIRE(pages().size() >= 5);
    if (!have("/usr/bin/man")) {
        WARN("man (man-db) is not installed: pages not rendered (make test-deps installs it)");
        return;
    }
    for (const char* width : {"78", "80"})
        for (const auto& p : pages()) {
            INFO(p.path << " at MANWIDTH=" << width);
            auto r = gputopo_test::run_cli("/usr/bin/env", {"MANWIDTH=" + std::string(width), "MAN_KEEP_FORMATTING=",
                                                            "/usr/bin/man", "--warnings=w", "-E", "UTF-8", "-l",
                                                            p.path});
            CHECK(r.rc == 0);
            CHECK(r.err == "");
            CHECK(r.out.find(p.name) != std::string::npos);
        }
}

TEST_CASE("man pages: one .TH form, man-pages(7) section order, spank(8) cited alike", "[man]") {
    const std::map<std::string, std::string> title{
        {"1", "User Commands"}, {"5", "File Formats"}, {"8", "System Administration"}};
    // man-pages(7) order of the standard sections; others may sit between them.
    const std::vector<std::string> order{"NAME",     "SYNOPSIS", "CONFIGURATION", "DESCRIPTION", "OPTIONS",
                                         "EXIT STATUS", "ERRORS", "ENVIRONMENT",  "FILES",       "NOTES",
                                         "BUGS",     "EXAMPLES", "SEE ALSO"};
    std::set<std::string> dates, sources;
    for (const auto& p : pages()) {
        INFO(p.path);
        std::smatch m;
        const std::regex th(R"re(^\.TH ([A-Z0-9.\\-]+) ([0-9]) (\d{4}-\d{2}-\d{2}) "(gputopo \d+\.\d+\.\d+)" "([^"]+)"$)re");
        REQUIRE(std::regex_match(p.lines.at(p.lines[0].rfind(".\\\"", 0) == 0 ? 1 : 0), m, th));
        std::string upper = p.name;
        for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        CHECK(plain(m[1].str()) == upper);
        CHECK(m[2].str() == p.section);
        CHECK(m[5].str() == title.at(p.section));
        dates.insert(m[3].str());
        sources.insert(m[4].str());

        size_t last = 0;
        std::string last_name;
        for (const auto& l : p.lines) {
            if (l.rfind(".SH ", 0) != 0) continue;
            std::string sec = l.substr(4);
            sec.erase(std::remove(sec.begin(), sec.end(), '"'), sec.end());
            CHECK(sec != "EXAMPLE");  // man-pages(7): EXAMPLES, OPTIONS
            CHECK(sec != "OPTION");
            auto pos = std::find(order.begin(), order.end(), sec);
            if (pos == order.end()) continue;
            const size_t idx = static_cast<size_t>(pos - order.begin());
            INFO("section " << sec << " after " << last_name);
            CHECK(idx >= last);
            last = idx;
            last_name = sec;
        }
        CHECK(last_name == "SEE ALSO");
        for (const auto& cite : words_matching(p.text, std::regex(R"(spank \((\d)\))"), 1)) CHECK(cite == "8");
        CHECK(p.text.find("docs/") != std::string::npos);  // SEE ALSO points at the guides
    }
    CHECK(dates.size() == 1);
    CHECK(sources.size() == 1);
}

TEST_CASE("gputopo-launch(1): one tagged entry with a description per option, every option, none gone", "[man]") {
    const Page& p = page("gputopo-launch.1");
    std::map<std::string, int> tagged;
    for (size_t i = 0; i + 2 < p.lines.size(); ++i) {
        if (p.lines[i] != ".TP" && p.lines[i] != ".TQ") continue;
        const std::string tag = tag_text(plain(p.lines[i + 1]));
        auto opts = words_matching(tag, std::regex(R"(--([a-z][a-z0-9-]*))"), 1);
        if (opts.empty()) continue;
        INFO("tag: " << tag);
        CHECK(opts.size() == 1);             // one option per entry
        CHECK(tag.rfind("--", 0) == 0);      // the tag is the option
        CHECK(p.lines[i + 2].rfind(".", 0) != 0);  // followed by its description
        for (const auto& o : opts) ++tagged[o];
    }
    const auto keys = gputopo::launch::option_keys();
    REQUIRE(keys.size() >= 20);
    for (const auto& k : keys) {
        INFO("option --" << k);
        CHECK(tagged[k] == 1);
    }
    for (const auto& kv : tagged) {
        INFO("documented --" << kv.first);
        CHECK(std::find(keys.begin(), keys.end(), kv.first) != keys.end());
    }
}

TEST_CASE("gputopo(8): every --gpu-topo mode and flag and every plugstack key, and no other", "[man]") {
    const Page& p = page("gputopo.8");
    std::set<std::string> tag_words, key_tags;
    for (const auto& t : tags(p)) {
        const std::string text = tag_text(t);
        std::smatch m;
        if (std::regex_match(text, m, std::regex(R"(([a-z_]+)=.*)"))) key_tags.insert(m[1]);
        else if (std::regex_match(text, m, std::regex(R"(([a-z]+))"))) tag_words.insert(m[1]);
    }
    const auto words = gpu_topo_words();
    REQUIRE(words.count("closest"));
    for (const auto& w : words) {
        INFO("--gpu-topo word " << w);
        CHECK(tag_words.count(w));
    }
    for (const auto& w : tag_words) {
        INFO("documented mode or flag " << w);
        CHECK(words.count(w));
    }
    const auto keys = gputopo::spank::plugstack_keys();
    REQUIRE(keys.size() >= 3);
    for (const auto& k : keys) {
        INFO("plugstack key " << k);
        CHECK(key_tags.count(k));
    }
    for (const auto& k : key_tags) {
        INFO("documented plugstack key " << k);
        CHECK(std::find(keys.begin(), keys.end(), k) != keys.end());
    }
}

TEST_CASE("gputopo.conf(5): every key the reader accepts", "[man]") {
    const Page& p = page("gputopo.conf.5");
    const auto keys = island_conf_keys();
    REQUIRE(keys.count("Island"));
    for (const auto& k : keys) {
        INFO("gputopo.conf key " << k);
        CHECK(p.text.find(k + "=") != std::string::npos);
    }
}

TEST_CASE("man pages: every environment variable in the code is documented, every documented GPUTOPO_ one exists",
          "[man]") {
    const auto vars = code_variables();
    REQUIRE(vars.count("GPUTOPO_MODE"));
    REQUIRE(vars.count("NCCL_IB_HCA"));
    const std::string text = all_text();
    for (const auto& v : vars) {
        if (launcher_option_variable(v)) continue;  // GPUTOPO_LAUNCH_<KEY>, documented once for all keys
        INFO("variable " << v);
        CHECK(std::regex_search(text, std::regex("\\b" + v + "\\b")));
    }
    for (const auto& v : words_matching(text, std::regex(R"(\bGPUTOPO_[A-Z0-9_]*[A-Z0-9]\b)"))) {
        INFO("documented variable " << v);
        CHECK((vars.count(v) || launcher_option_variable(v)));
    }
}

TEST_CASE("man pages: every gputopo command and option the CLI accepts, and none that it does not", "[man][cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    auto top = gputopo_test::run_cli(cli, {"--help"});
    REQUIRE(top.rc == 0);
    const auto commands = words_matching(top.out, std::regex(R"(\n  ([a-z][a-z-]*)  )"), 1);
    REQUIRE(commands.count("plan"));
    std::set<std::string> accepted{"help", "version"};
    const std::string text = all_text();
    std::set<std::string> command_tags;  // gputopo(1) COMMANDS: one entry per command
    for (const auto& t : tags(page("gputopo.1"))) {
        std::smatch m;
        const std::string text_of_tag = tag_text(t);
        if (std::regex_search(text_of_tag, m, std::regex(R"(^([a-z][a-z-]*)\b)"))) command_tags.insert(m[1]);
    }
    for (const auto& c : commands) {
        INFO("command " << c);
        CHECK(command_tags.count(c));
        if (c == "help") continue;
        auto h = gputopo_test::run_cli(cli, {c, "--help"});
        REQUIRE(h.rc == 0);
        for (const auto& o : words_matching(h.out, std::regex(R"(\n  --([a-z][a-z0-9-]*))"), 1)) {
            INFO("option --" << o);
            CHECK(text.find("--" + o) != std::string::npos);
            accepted.insert(o);
        }
    }
    for (const char* name : {"gputopo.1", "gputopo-doctor.8"}) {
        for (const auto& t : tags(page(name)))
            for (const auto& o : words_matching(tag_text(t), std::regex(R"(^--([a-z][a-z0-9-]*))"), 1)) {
                INFO(name << " documents --" << o);
                CHECK(accepted.count(o));
            }
    }
}

namespace {

// "[--format table|json]" choice lists in `text` (blanks around | [ ] dropped): option -> "a|b|c".
std::map<std::string, std::string> choice_lists(std::string text) {
    text = std::regex_replace(text, std::regex(R"(\s*\|\s*)"), "|");
    text = std::regex_replace(text, std::regex(R"(\[\s+)"), "[");
    text = std::regex_replace(text, std::regex(R"(\s+\])"), "]");
    std::map<std::string, std::string> out;
    const std::regex re(R"(\[--([a-z][a-z-]*) ([a-z0-9-]+(?:\|[a-z0-9-]+)+)\])");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        out[(*it)[1].str()] = (*it)[2].str();
    return out;
}

// Each command's SYNOPSIS entry in a page, as plain text: ".SY gputopo" + ".B show" or
// ".B gputopo doctor" starts one.
std::map<std::string, std::string> synopsis_entries(const Page& p) {
    std::map<std::string, std::string> out;
    bool in = false, pending = false;
    std::string cmd;
    std::smatch m;
    for (const auto& raw : p.lines) {
        const std::string line = plain(raw);
        if (raw.rfind(".SH", 0) == 0) {
            in = raw == ".SH SYNOPSIS";
            continue;
        }
        if (!in) continue;
        if (raw == ".SY gputopo") {
            pending = true;
        } else if (pending && std::regex_match(line, m, std::regex(R"(\.B ([a-z][a-z-]*))"))) {
            cmd = m[1];
            pending = false;
        } else if (std::regex_match(line, m, std::regex(R"(\.B gputopo ([a-z][a-z-]*))"))) {
            cmd = m[1];
        } else if (!cmd.empty()) {
            out[cmd] += std::regex_replace(line, std::regex(R"(^\.[A-Z]+ ?)"), "") + " ";
        }
    }
    return out;
}

// "a|b|c" as the CLI's messages list it: "a, b or c".
std::string spoken(const std::string& list) {
    std::vector<std::string> w;
    std::stringstream in(list);
    for (std::string s; std::getline(in, s, '|');) w.push_back(s);
    std::string out;
    for (size_t i = 0; i < w.size(); ++i) out += (i == 0 ? "" : i + 1 == w.size() ? " or " : ", ") + w[i];
    return out;
}

}  // namespace

TEST_CASE("man pages: each SYNOPSIS choice list and documented default is the code's", "[man][cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string topo =
        gputopo_test::topology("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml");
    auto base_args = [&](const std::string& c) -> std::vector<std::string> {
        if (c == "ranks" || c == "labels") return {c, "--nodes", "n[1-2]"};
        return {c, "--topology", topo};
    };
    size_t lists = 0, defaults = 0;
    for (const char* name : {"gputopo.1", "gputopo-doctor.8"}) {
        for (const auto& [cmd, synopsis] : synopsis_entries(page(name))) {
            auto h = gputopo_test::run_cli(cli, {cmd, "--help"});
            if (h.rc != 0) continue;  // not a command with options ("help")
            INFO(name << " SYNOPSIS of " << cmd);
            const std::string usage = h.out.substr(0, h.out.find("\n\n"));
            const auto documented = choice_lists(synopsis);
            CHECK(documented == choice_lists(usage));
            // What the code accepts: the list its message for a bad value gives.
            for (const auto& [opt, list] : documented) {
                INFO("--" << opt << " " << list);
                std::vector<std::string> args = base_args(cmd);
                args.insert(args.end(), {"--" + opt, "zzqq"});
                auto bad = gputopo_test::run_cli(cli, args);
                CHECK(bad.rc == 2);
                CHECK(bad.err.find("unknown value 'zzqq' for --" + opt + " (expected " + spoken(list) + ")") !=
                      std::string::npos);
                ++lists;
            }
            // "(default: X)" in --help: the man page says so, and giving X changes nothing.
            std::smatch m;
            const std::regex def(R"(\n  --([a-z][a-z-]*) ([a-z0-9|-]+) +[^\n]*\(default: ([a-z0-9-]+)\))");
            for (auto it = std::sregex_iterator(h.out.begin(), h.out.end(), def); it != std::sregex_iterator(); ++it) {
                const std::string opt = (*it)[1], value = (*it)[3];
                INFO("--" << opt << " default " << value);
                // The option's own entry: its tag line (".BR --format ...") and what follows, macros dropped.
                const std::string text = page(name).text;
                std::smatch tag;
                REQUIRE(std::regex_search(text, tag, std::regex("\n\\.B[IR]? --" + opt + "\\b")));
                const std::string entry = std::regex_replace(text.substr(static_cast<size_t>(tag.position(0)) + 1, 400),
                                                             std::regex(R"(\n\.[A-Z]+ ?)"), " ");
                INFO(entry);
                CHECK(std::regex_search(entry, std::regex("default[^.]*\\b" + value + "\\b|\\b" + value +
                                                          "\\s+\\(the default\\b")));
                auto without = gputopo_test::run_cli(cli, base_args(cmd));
                std::vector<std::string> args = base_args(cmd);
                args.insert(args.end(), {"--" + opt, value});
                auto with = gputopo_test::run_cli(cli, args);
                CHECK(without.rc == with.rc);
                CHECK(without.out == with.out);
                ++defaults;
            }
        }
    }
    CHECK(lists >= 6);
    CHECK(defaults >= 3);
}
