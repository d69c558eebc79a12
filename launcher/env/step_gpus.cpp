#include "launcher/env/step_gpus.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "launcher/state/node_state.hpp"
#include "step/step_inputs.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/strings.hpp"

namespace gputopo::launch {

namespace {

// An entry's text, "" when it is missing, not a regular file this user owns, or written
// before `not_before` (a launcher that died long before this one started).
std::string read_small(const std::string& path, time_t not_before) {
    int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return "";
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_mtime < not_before) {
        close(fd);
        return "";
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

bool publish(const std::string& dir, int local_id, const std::vector<int>& own, const std::string& identity) {
    const std::string path = dir + "/" + std::to_string(local_id);
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    const std::string text = "gpus=" + join_ints(own) + "\nstep=" + identity + "\n";
    bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
        unlink(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace

bool gpus_narrowed(const std::optional<std::string>& tres_bind) {
    return tres_bind && tres_bind->find("gpu:") != std::string::npos;
}

std::string step_identity(const StepEnv& env) {
    auto clean = [](const std::string& v) {
        std::string out;
        for (char c : v.substr(0, 64))
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-')
                out += c;
        return out;
    };
    std::string restart = clean(env(env::kSlurmRestartCount).value_or("0"));
    std::string id = "a" + (restart.empty() ? std::string("0") : restart);
    for (const char* v : {env::kSlurmSrunCommHost, env::kSlurmSrunCommPort, env::kSlurmStepLauncherPort,
                          env::kSlurmLaunchNodeIpaddr})
        if (auto x = env(v); x && !x->empty()) id += "-" + clean(*x);
    return id;
}

std::string step_gpus_dir(const StepEnv& env, const std::string& node, const std::string& node_state_dir,
                          std::string& note) {
    const std::string job = env(env::kSlurmJobId).value_or(""), step = env(env::kSlurmStepId).value_or("");
    for (const std::string& part : {job, step, node})
        if (part.empty() || part.find('/') != std::string::npos || part == "." || part == "..") {
            note = "no usable job/step/node name for the step's GPU directory";
            return "";
        }
    const std::string user = node_private_dir(node_state_dir, node, env(env::kTmpdir).value_or(""), &note);
    if (user.empty()) return "";
    // Inside a directory only this user can write to: nobody else can have
    // made it; and keyed by attempt and srun, so no earlier launcher's entries are in it.
    const std::string dir = user + "/" + job + "." + step + "." + node + "." + step_identity(env);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        note = "cannot create " + dir + ": " + std::strerror(errno);
        return "";
    }
    return dir;
}

std::optional<std::vector<int>> exchange_step_gpus(const StepGpusExchange& x, const std::vector<int>& own,
                                                   std::string& note) {
    if (!publish(x.dir, x.local_id, own, x.identity)) {
        note = "cannot write to " + x.dir + ": " + std::strerror(errno);
        return std::nullopt;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(x.timeout_s);
    // Fresh entries only: a partner of this step published at most timeout_s
    // before this task did (it gives up after that); 5 s for clock steps.
    const time_t not_before = time(nullptr) - static_cast<time_t>(x.timeout_s) - 5;
    for (;;) {
        std::vector<bool> all(static_cast<size_t>(step::kMaxGpuIndex), false);
        int published = 0;
        for (int t = 0; t < x.local_tasks; ++t) {
            // "gpus=LIST\nstep=IDENTITY\n": an entry of another attempt or
            // step (left by a launcher that died) is not this step's.
            std::string text = read_small(x.dir + "/" + std::to_string(t), not_before);
            const std::string tail = "\nstep=" + x.identity + "\n";
            if (text.rfind("gpus=", 0) != 0 || text.size() < 5 + tail.size() ||
                text.compare(text.size() - tail.size(), tail.size(), tail) != 0)
                continue;
            try {
                std::string list = text.substr(5, text.size() - 5 - tail.size());
                if (list.find('\n') != std::string::npos) continue;
                if (!list.empty())
                    for (int g : step::parse_index_list(list, "task " + std::to_string(t) + "'s GPUs"))
                        all[static_cast<size_t>(g)] = true;
                ++published;
            } catch (const std::exception&) {
            }
        }
        if (published == x.local_tasks) {
            std::vector<int> out;
            for (int g = 0; g < step::kMaxGpuIndex; ++g)
                if (all[static_cast<size_t>(g)]) out.push_back(g);
            return out;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            note = std::to_string(published) + " of " + std::to_string(x.local_tasks) +
                   " local tasks published their GPUs within " + std::to_string(static_cast<int>(x.timeout_s)) + " s";
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void forget_step_gpus(const StepGpusExchange& x) {
    if (x.dir.empty()) return;
    // Every task reads the others' entries before it starts its program, so
    // once all have marked themselves done, nobody reads any more: the last
    // one removes the directory.
    const std::string done = x.dir + "/" + std::to_string(x.local_id) + ".done";
    int fd = open(done.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
    for (int t = 0; t < x.local_tasks; ++t)
        if (access((x.dir + "/" + std::to_string(t) + ".done").c_str(), F_OK) != 0) return;
    for (int t = 0; t < x.local_tasks; ++t) {
        unlink((x.dir + "/" + std::to_string(t)).c_str());
        unlink((x.dir + "/" + std::to_string(t) + ".done").c_str());
    }
    rmdir(x.dir.c_str());
}

}  // namespace gputopo::launch
