#include "spank/plugstack_file.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <cerrno>

#include <sstream>

#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"

namespace gputopo::spank {

namespace {

struct Reader {
    int files = 0;

    std::optional<std::vector<std::string>> read(const std::string& path, int depth) {
        if (++files > kMaxIncludes)
            throw TopologyError(path + ": more than " + std::to_string(kMaxIncludes) +
                                " files included from plugstack.conf (expected a plugstack.conf as spank(8) has it)");
        std::istringstream in(read_text_file(path, "plugstack.conf"));
        const size_t slash = path.rfind('/');
        const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
        for (std::string line; std::getline(in, line);) {
            const size_t hash = line.find('#');
            if (hash != std::string::npos) line.resize(hash);
            std::istringstream words(line);
            std::vector<std::string> w;
            for (std::string s; words >> s;) w.push_back(s);
            if (w.size() < 2) continue;
            if (w[0] == "include") {
                if (depth >= kMaxIncludeDepth) continue;
                if (auto found = include(w[1][0] == '/' ? w[1] : dir + "/" + w[1], depth)) return found;
            } else if ((w[0] == "required" || w[0] == "optional") &&
                       (w[1] == "gputopo.so" || (w[1].size() > 11 && w[1].compare(w[1].size() - 11, 11, "/gputopo.so") == 0))) {
                return std::vector<std::string>(w.begin() + 2, w.end());
            }
        }
        return std::nullopt;
    }

    std::optional<std::vector<std::string>> include(const std::string& pattern, int depth) {
        glob_t g{};
        const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
        std::vector<std::string> paths;
        if (rc == 0)
            for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
        ::globfree(&g);
        for (const auto& p : paths)
            if (auto found = read(p, depth + 1)) return found;
        return std::nullopt;
    }
};

}  // namespace

std::optional<std::vector<std::string>> gputopo_plugstack_args(const std::string& plugstack_conf) {
    Reader r;
    return r.read(plugstack_conf, 0);
}

namespace {
constexpr char kArgPrefix[] = "plugstack.conf: ";
}  // namespace

std::optional<PluginConfig> site_plugin_config(const std::string& plugstack_conf) {
    struct stat sb {};
    if (::stat(plugstack_conf.c_str(), &sb) != 0 && errno == ENOENT) return std::nullopt;
    const auto words = gputopo_plugstack_args(plugstack_conf);
    if (!words) return std::nullopt;
    try {
        return parse_plugstack_args(*words);
    } catch (const ParseError& e) {
        // The argument messages start "plugstack.conf: "; the path names the file instead.
        std::string why = e.what();
        if (why.rfind(kArgPrefix, 0) == 0) why.erase(0, sizeof kArgPrefix - 1);
        throw TopologyError(plugstack_conf + ": " + why);
    }
}

}  // namespace gputopo::spank
