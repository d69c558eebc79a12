// Runs the built `gputopo` (GPUTOPO_CLI, exported by tests/run_tests.sh) for
// the end-to-end CLI tests: exit status, standard output and error.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gputopo_test {

struct CliResult {
    int rc = -1;
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// `live`: the command discovers this machine with hwloc. hwloc's PCI plugin
// (libpciaccess) leaks a few allocations and is dlclose()d before exit, so
// LeakSanitizer cannot name (or be told to suppress) it; for such runs of a
// sanitizer build only leak detection is turned off (ASan/UBSan stay on).
inline CliResult run_cli(const std::string& cli, const std::vector<std::string>& args, bool live = false) {
    char out_path[] = "/tmp/gputopo-cli-out-XXXXXX";
    char err_path[] = "/tmp/gputopo-cli-err-XXXXXX";
    int out_fd = mkstemp(out_path);
    int err_fd = mkstemp(err_path);
    REQUIRE(out_fd >= 0);
    REQUIRE(err_fd >= 0);
    std::vector<std::string> argv_s{cli};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        if (live) {
            const char* asan = std::getenv("ASAN_OPTIONS");
            std::string opts = std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "detect_leaks=0";
            setenv("ASAN_OPTIONS", opts.c_str(), 1);
        }
        execv(cli.c_str(), argv.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(out_fd);
    close(err_fd);
    CliResult r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    unlink(out_path);
    unlink(err_path);
    return r;
}

// The binary under test, or "" when GPUTOPO_CLI is unset (skip). Set but
// missing is a failure.
inline std::string cli_or_skip() {
    const char* cli = std::getenv("GPUTOPO_CLI");
    if (!cli || !*cli) {
        WARN("GPUTOPO_CLI is not set: skipping the end-to-end CLI test (tests/run_tests.sh sets it)");
        return "";
    }
    INFO("GPUTOPO_CLI=" << cli);
    REQUIRE(access(cli, X_OK) == 0);
    return cli;
}

}  // namespace gputopo_test
