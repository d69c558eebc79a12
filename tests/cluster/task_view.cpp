// task-view: what a task really has, read from inside it, for the cluster tests.
//   task-view DEVDIR
// Prints one line
//   VIEW open=nvidia2,nvidia3 denied=nvidia0,nvidia1 cpus=0-1 mempolicy=preferred:0
// open:   the GPU device files in DEVDIR (the node's gres.conf File= directory) this task may
//         open: open() succeeds or fails with anything but EPERM/EACCES (no driver: ENXIO).
//         EPERM is the devices cgroup saying no (ConstrainDevices).
// denied: the ones it may not open.
// cpus:   Cpus_allowed_list (/proc/self/status), the kernel's view of the affinity.
// mempolicy: get_mempolicy(2): default, preferred, bind, interleave, local or
//         preferred_many, and the node mask as a list.
// Nothing here reads a variable gputopo wrote.
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
    return out.empty() ? "-" : out;
}

// Natural order: nvidia2 before nvidia10.
bool natural_less(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
        size_t i = s.find_first_of("0123456789");
        return std::make_pair(s.substr(0, i), i == std::string::npos ? -1L : std::stol(s.substr(i)));
    };
    return split(a) < split(b);
}

std::string cpus_allowed() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Cpus_allowed_list:", 0) == 0) {
            size_t at = line.find_first_not_of(" \t", 18);
            return at == std::string::npos ? "" : line.substr(at);
        }
    return "?";
}

std::string mempolicy() {
    int mode = -1;
    unsigned long mask[16] = {};
    if (syscall(SYS_get_mempolicy, &mode, mask, sizeof mask * 8, nullptr, 0UL) != 0)
        return std::string("error:") + std::strerror(errno);
    const char* names[] = {"default", "preferred", "bind", "interleave", "local", "preferred_many"};
    std::string out = mode >= 0 && mode < 6 ? names[mode] : std::to_string(mode);
    std::vector<std::string> nodes;
    for (int n = 0; n < 16 * 64; ++n)
        if (mask[n / 64] & (1UL << (n % 64))) nodes.push_back(std::to_string(n));
    return out + ":" + join(nodes);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: task-view DEVDIR\n");
        return 2;
    }
    std::vector<std::string> names;
    if (DIR* d = opendir(argv[1])) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') names.emplace_back(e->d_name);
        closedir(d);
    }
    std::sort(names.begin(), names.end(), natural_less);
    std::vector<std::string> open_ok, denied;
    for (const auto& n : names) {
        const std::string path = std::string(argv[1]) + "/" + n;
        int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) close(fd);
        if (fd < 0 && (errno == EPERM || errno == EACCES)) denied.push_back(n);
        else open_ok.push_back(n);
    }
    std::printf("VIEW open=%s denied=%s cpus=%s mempolicy=%s\n", join(open_ok).c_str(), join(denied).c_str(),
                cpus_allowed().c_str(), mempolicy().c_str());
    return 0;
}
