// README.md against the code (issue 36): its example output is what
// docs/readme-example.sh prints with the built `gputopo` (GPUTOPO_CLI), and its
// install-and-enable steps are the admin guide's.
#include <catch2/catch.hpp>

#include <string>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"

namespace {

// The text between "<!-- NAME: begin -->\n```\n" and "```\n<!-- NAME: end -->".
std::string marked_block(const std::string& doc, const std::string& name) {
    const std::string begin = "<!-- " + name + ": begin -->\n```\n", end = "```\n<!-- " + name + ": end -->";
    const size_t b = doc.find(begin);
    if (b == std::string::npos) return "(no '" + begin + "')";
    const size_t e = doc.find(end, b);
    if (e == std::string::npos) return "(no '" + end + "')";
    return doc.substr(b + begin.size(), e - b - begin.size());
}

}  // namespace

TEST_CASE("README: the example output is docs/readme-example.sh's, run with the built gputopo", "[readme][cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string src = gputopo_test::source_dir();
    const std::string readme = gputopo_test::slurp(src + "/README.md");
    auto r = gputopo_test::run_cli("/bin/bash", {src + "/docs/readme-example.sh", cli});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    REQUIRE(r.out.find("TASK  GPUS") != std::string::npos);
    // When this fails: bash docs/readme-example.sh build/gputopo, and paste its output into README.md.
    CHECK(marked_block(readme, "readme-example") == r.out);
}

TEST_CASE("README and the admin guide: the package is enabled with the same ln -s and include line", "[readme]") {
    const std::string src = gputopo_test::source_dir();
    const std::string readme = gputopo_test::slurp(src + "/README.md");
    const std::string guide = gputopo_test::slurp(src + "/docs/admin-guide.md");
    for (const char* line : {"ln -s /usr/share/gputopo/plugstack.conf /etc/slurm/plugstack.conf.d/gputopo.conf",
                             "echo 'include /etc/slurm/plugstack.conf.d/*.conf' >> /etc/slurm/plugstack.conf",
                             "apt install ./build/packages/gputopo_*.deb", "dnf install ./build/packages/gputopo-[0-9]*.rpm",
                             "systemctl restart slurmd"}) {
        INFO(line);
        CHECK(readme.find(line) != std::string::npos);
        CHECK(guide.find(line) != std::string::npos);
    }
    // The paths those lines name are the ones the packaging writes (packaging/*.sh, packaging/common.sh).
    CHECK(gputopo_test::slurp(src + "/packaging/common.sh").find("PLUGSTACK_CONF=\"$3/share/gputopo/plugstack.conf\"") !=
          std::string::npos);
    CHECK(gputopo_test::slurp(src + "/packaging/deb.sh").find("out=$build/packages") != std::string::npos);
    CHECK(gputopo_test::slurp(src + "/packaging/rpm.sh").find("out=$(realpath -m \"$build/packages\")") != std::string::npos);
}

// The admin guide's enable block, extracted as CI's Debian-root check extracts it
// (tests/release/guide_block.sh) and run as printed, twice, in a scratch directory standing
// for / (the only change: that prefix; systemctl is a no-op): it links the package's snippet
// into plugstack.conf.d and includes that directory from plugstack.conf exactly once.
TEST_CASE("admin guide: the enable steps, run as printed, link the package's snippet and include it once",
          "[readme]") {
    const std::string src = gputopo_test::source_dir();
    char dir[] = "/tmp/gputopo-guide-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string root = dir;
    const std::string script =
        "set -e; cd '" + src + "'; r='" + root + "'\n"
        "mkdir -p \"$r/usr/share/gputopo\" \"$r/etc/slurm\"; echo 'optional /p/gputopo.so' > \"$r/usr/share/gputopo/plugstack.conf\"\n"
        "block=$(bash tests/release/guide_block.sh docs/admin-guide.md enable)\n"
        "block=${block//\\/etc\\/slurm/$r\\/etc\\/slurm}; block=${block//\\/usr\\/share\\/gputopo/$r\\/usr\\/share\\/gputopo}\n"
        "for i in 1 2; do bash -c \"systemctl() { :; }; set -e; $block\"; done\n"
        "readlink \"$r/etc/slurm/plugstack.conf.d/gputopo.conf\"; cat \"$r/etc/slurm/plugstack.conf\"\n";
    auto r = gputopo_test::run_cli("/bin/bash", {"-c", script});
    INFO(script << "\n" << r.err);
    CHECK(r.rc == 0);
    CHECK(r.out == root + "/usr/share/gputopo/plugstack.conf\ninclude " + root + "/etc/slurm/plugstack.conf.d/*.conf\n");
    gputopo_test::run_cli("/bin/rm", {"-rf", root});
}
