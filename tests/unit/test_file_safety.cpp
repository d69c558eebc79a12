// Files the plugin reads as root are bounded and never followed blindly
// (issue 12, finding 5): the cache directory must be root's own, cache files
// are read only when regular and without following links, every read has a
// size limit, and no read blocks on a FIFO or runs on a device.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "step/topology_cache.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;

namespace {

const char* kTopo = "nccl/aws-p4d.24xlarge_8xA100-SXM4-40GB_4xEFA_2xXeon8275CL_nccl-topo.xml";

// Runs f in a child with a deadline: true when it returned normally in time.
// (Before the fixes these reads hung on a FIFO or read /dev/zero until memory
// ran out; the child keeps that from taking the test run down.)
bool finishes_within(unsigned seconds, const std::function<void()>& f) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(seconds);
        try {
            f();
        } catch (...) {
            _exit(3);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/gputopo-filesafety-XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

std::string snapshot_name(const std::string& dir, const std::string& topo) {
    std::string flat = topo;
    for (char& c : flat)
        if (c == '/') c = '_';
    return dir + "/topo-" + flat + ".snap";
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "(no exception)";
}

}  // namespace

TEST_CASE("read_file_bounded: size limit, FIFO, device, directory, link", "[files]") {
    TempDir d;
    const std::string file = d.path + "/f";
    std::ofstream(file) << std::string(1000, 'x');
    ReadFailure why;
    CHECK(read_file_bounded(file, ReadLimits{1000, true}, &why).value() == std::string(1000, 'x'));
    CHECK_FALSE(read_file_bounded(file, ReadLimits{999, true}, &why));
    CHECK(why.err == EFBIG);
    CHECK(why.what == "is larger than 999 bytes");
    const std::string fifo = d.path + "/fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(finishes_within(10, [&] {
        ReadFailure w;
        if (read_file_bounded(fifo, ReadLimits{}, &w) || w.what != "is not a regular file") throw 1;
    }));
    CHECK_FALSE(read_file_bounded("/dev/zero", ReadLimits{}, &why));
    CHECK(why.what == "is not a regular file");
    CHECK_FALSE(read_file_bounded(d.path, ReadLimits{}, &why));
    CHECK(why.what == "is a directory");
    CHECK_FALSE(read_file_bounded(d.path + "/none", ReadLimits{}, &why));
    CHECK(why.what == "does not exist");
    const std::string link = d.path + "/link";
    REQUIRE(symlink(file.c_str(), link.c_str()) == 0);
    CHECK(read_file_bounded(link, ReadLimits{}, &why));
    CHECK_FALSE(read_file_bounded(link, ReadLimits{kMaxTopologyFileBytes, false}, &why));
    CHECK(why.what == "is a symbolic link");
}

TEST_CASE("read_first_line: the first line of a small file, nothing from a FIFO, device or big file", "[files]") {
    TempDir d;
    const std::string file = d.path + "/attr";
    std::ofstream(file) << "4: ACTIVE\nsecond\n";
    CHECK(read_first_line(file) == "4: ACTIVE");
    std::ofstream(d.path + "/nonl") << "0-3";
    CHECK(read_first_line(d.path + "/nonl") == "0-3");
    std::ofstream(d.path + "/big") << std::string(70000, 'x');
    CHECK(read_first_line(d.path + "/big") == "");
    const std::string fifo = d.path + "/fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(finishes_within(10, [&] {
        if (!read_first_line(fifo).empty()) throw 1;
    }));
    CHECK(read_first_line("/dev/zero") == "");
    CHECK(read_first_line(d.path + "/none") == "");
}

TEST_CASE("a topology file that is a device or a FIFO is refused, not read forever", "[files]") {
    CHECK(finishes_within(20, [] {
        std::string m = message_of([] { load_topology_file("/dev/zero"); });
        if (m.find("/dev/zero is not a regular file") == std::string::npos) throw 1;
    }));
    TempDir d;
    const std::string fifo = d.path + "/topo.xml";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(finishes_within(20, [&] {
        std::string m = message_of([&] { load_topology_file(fifo); });
        if (m.find("is not a regular file") == std::string::npos) throw 1;
    }));
}

TEST_CASE("cache directory: a link, another owner or group/other write is refused with one message", "[files][spank]") {
    const std::string topo = gputopo_test::topology(kTopo);
    TempDir d;
    const std::string real = d.path + "/real";
    REQUIRE(mkdir(real.c_str(), 0755) == 0);
    REQUIRE(chmod(real.c_str(), 0755) == 0);
    REQUIRE(geteuid() == 0);  // the plugin's cache is root's; these tests run as root
    // The good directory works: a snapshot is written and read back.
    CHECK(step::load_topology_via_snapshot(topo, real).gpus.size() == 8);
    CHECK(access(snapshot_name(real, topo).c_str(), F_OK) == 0);

    const std::string link = d.path + "/link";
    REQUIRE(symlink(real.c_str(), link.c_str()) == 0);
    std::string m = message_of([&] { step::load_topology_via_snapshot(topo, link); });
    CHECK(m.find("cache directory " + link + " is a symbolic link") != std::string::npos);
    CHECK(m.find("expected a directory owned by root, not writable by group or others") != std::string::npos);

    REQUIRE(chmod(real.c_str(), 0777) == 0);
    m = message_of([&] { step::load_topology_via_snapshot(topo, real); });
    CHECK(m.find("is writable by group or others") != std::string::npos);
    REQUIRE(chmod(real.c_str(), 0775) == 0);
    CHECK(message_of([&] { step::load_topology_via_snapshot(topo, real); }).find("writable by group") != std::string::npos);

    REQUIRE(chmod(real.c_str(), 0755) == 0);
    REQUIRE(chown(real.c_str(), 65534, 65534) == 0);
    m = message_of([&] { step::load_topology_via_snapshot(topo, real); });
    CHECK(m.find("is owned by uid 65534") != std::string::npos);
    REQUIRE(chown(real.c_str(), 0, 0) == 0);

    const std::string file = d.path + "/plain";
    std::ofstream(file) << "x";
    CHECK(message_of([&] { step::load_topology_via_snapshot(topo, file); }).find("is not a directory") !=
          std::string::npos);
    CHECK_THROWS_AS(step::check_cache_dir(d.path + "/none"), TopologyError);
}

TEST_CASE("cache files: a FIFO or a link to /dev/zero as snapshot is ignored, the file is read", "[files][spank]") {
    const std::string topo = gputopo_test::topology(kTopo);
    TempDir d;
    REQUIRE(chmod(d.path.c_str(), 0755) == 0);
    const std::string snap = snapshot_name(d.path, topo);
    REQUIRE(mkfifo(snap.c_str(), 0600) == 0);
    CHECK(finishes_within(20, [&] {
        if (step::load_topology_via_snapshot(topo, d.path).gpus.size() != 8) throw 1;
    }));
    unlink(snap.c_str());
    REQUIRE(symlink("/dev/zero", snap.c_str()) == 0);
    CHECK(finishes_within(20, [&] {
        if (step::load_topology_via_snapshot(topo, d.path).gpus.size() != 8) throw 1;
    }));
    // A planted link is not replaced through: the link itself is replaced by a real snapshot.
    struct stat st {};
    REQUIRE(lstat(snap.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
}
