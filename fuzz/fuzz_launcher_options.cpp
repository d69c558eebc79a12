// gputopo-launch's options (launcher/options/options.cpp): before the first NUL byte a
// config file, after it one command-line word per line (argv[0] added);
// GPUTOPO_LAUNCH_* variables come from "ENV:NAME=VALUE" words.
#include <map>

#include "fuzz/fuzz_common.hpp"
#include "launcher/options/options.hpp"
#include "topo/core/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string all = gputopo_fuzz::text_of(data, size);
    const size_t nul = all.find('\0');
    const std::string conf = all.substr(0, nul);
    std::vector<std::string> words{"gputopo-launch"};
    std::map<std::string, std::string> env;
    if (nul != std::string::npos) {
        for (const std::string& w : gputopo::split_fields(all.substr(nul + 1), '\n')) {
            size_t eq = w.find('=');
            if (w.rfind("ENV:", 0) == 0 && eq != std::string::npos)
                env[w.substr(4, eq - 4)] = w.substr(eq + 1);
            else
                words.push_back(w);
        }
    }
    gputopo_fuzz::expect_clean([&] {
        gputopo::launch::Options o;
        gputopo::launch::apply_config_text(o, conf, "fuzz.conf");
    });
    std::vector<const char*> argv;
    for (const std::string& w : words) argv.push_back(w.c_str());
    argv.push_back(nullptr);
    gputopo::launch::Getenv get = [&](const std::string& k) -> std::optional<std::string> {
        auto it = env.find(k);
        if (it == env.end()) return std::nullopt;
        return it->second;
    };
    gputopo_fuzz::expect_clean([&] {
        gputopo::launch::parse_options(static_cast<int>(words.size()), argv.data(), get);
    });
    return 0;
}
