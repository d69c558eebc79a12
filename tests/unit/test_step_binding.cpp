// The one step binding (step/): the plugin's path and the launcher's path give
// identical actions on the same inputs; memory policy; the bounds on Slurm's
// GPU lists and on job-environment values.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "launcher/env/binding.hpp"
#include "launcher/env/step_gpus.hpp"
#include "spank/job_env.hpp"
#include "step/apply.hpp"
#include "step/step_binding.hpp"
#include "tests/unit/env_map.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/plan/task_env.hpp"
#include "topo/sources/topology_loader.hpp"
#include "topo/core/host.hpp"

using namespace gputopo;
using gputopo::step::Getenv;

namespace {

using gputopo_test::Env;
using gputopo_test::env_of;

std::vector<std::string> fixture_files() {
    std::vector<std::string> out;
    for (const auto& rel : gputopo_test::topology_files()) out.push_back(gputopo_test::topology(rel));
    return out;
}

// One step shape on one node, as Slurm presents it.
struct Shape {
    std::string name;
    std::vector<int> step_gpus;   // the step's GPUs on the node
    int tasks = 1;
    int gpus_per_task = 0;        // 0: every task sees the step's set (--gpus-per-node); N: narrowed per task
    bool relative = false;        // ConstrainDevices: CUDA_VISIBLE_DEVICES counts 0..k-1
    bool ranges = false;          // SLURM_STEP_GPUS written with ranges ("0-3")
    std::string options = "closest";
    Env user;                     // variables the user set
};

// "0-3,6" for ranges, "0,1,2,3,6" otherwise.
std::string gpu_text(const std::vector<int>& g, bool ranges) {
    if (!ranges) return join_ints(g);
    CpuSet s;
    for (int i : g) s.set(i);
    return s.to_list();
}

std::vector<int> positions_of(const std::vector<int>& own, const std::vector<int>& all) {
    std::vector<int> out;
    for (int g : own) out.push_back(static_cast<int>(std::find(all.begin(), all.end(), g) - all.begin()));
    return out;
}

std::vector<int> count_up(size_t n) {
    std::vector<int> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
    return v;
}

// What slurmstepd's user_init sees (the step's whole set on the node).
Env step_env(const Shape& s) {
    Env e = s.user;
    e["SLURM_STEP_GPUS"] = gpu_text(s.step_gpus, s.ranges);
    e["CUDA_VISIBLE_DEVICES"] = join_ints(s.relative ? count_up(s.step_gpus.size()) : s.step_gpus);
    e["SLURM_STEP_NODELIST"] = "n7";
    e["SLURM_STEP_TASKS_PER_NODE"] = std::to_string(s.tasks);
    return e;
}

// What task `t` sees when it starts (the launcher's input; the plugin's
// task_init reads the same for the keep-the-user's-value rule).
Env task_env(const Shape& s, int t) {
    Env e = step_env(s);
    e["SLURM_LOCALID"] = std::to_string(t);
    e["SLURM_NODEID"] = "0";
    e["SLURMD_NODENAME"] = "n7";
    if (s.gpus_per_task > 0) {
        std::vector<int> own(s.step_gpus.begin() + t * s.gpus_per_task,
                             s.step_gpus.begin() + (t + 1) * s.gpus_per_task);
        e["SLURM_STEP_GPUS"] = gpu_text(own, s.ranges);
        e["CUDA_VISIBLE_DEVICES"] = join_ints(s.relative ? positions_of(own, s.step_gpus) : own);
        e["SLURMD_TRES_BIND"] = "gpu:per_task:" + std::to_string(s.gpus_per_task);
    }
    return e;
}

std::string show(const std::vector<EnvVar>& v) {
    std::string s;
    for (const auto& e : v) s += e.name + "=" + e.value + (e.user_wins ? "(u) " : " ");
    return s;
}

std::string show(const step::TaskAction& a) {
    return "set[" + show(a.set) + "] kept[" + show(a.kept) + "] visible=" + join_ints(a.visible) +
           " cpus=" + a.cpus.to_list() + " mems=" + join_ints(a.mems) + " mpol=" + mempolicy_name(a.mempolicy) +
           " apply=" + (a.apply_affinity ? "1" : "0") + " skip=" + a.skip_reason + " line=" + a.verbose_line;
}

std::vector<Shape> shapes_for(const Node& node) {
    const int n = static_cast<int>(node.gpus.size());
    std::vector<int> all = count_up(node.gpus.size());
    std::vector<Shape> out;
    out.push_back({"one task per GPU, shared view", all, n, 0, false, false, "closest", {}});
    out.push_back({"ranges, island, isolate", all, n, 0, false, true, "island,isolate", {}});
    if (n >= 2) {
        out.push_back({"--gpus-per-task=1", all, n, 1, false, false, "closest", {}});
        std::vector<int> upper(all.begin() + n / 2, all.end());
        out.push_back({"upper half, relative numbering", upper, static_cast<int>(upper.size()), 0, true, false,
                       "closest", {}});
        out.push_back({"upper half, --gpus-per-task=1, relative", upper, static_cast<int>(upper.size()), 1, true,
                       true, "closest,share", {}});
        out.push_back({"user-set NCCL_IB_HCA and UCX_NET_DEVICES", all, n, 0, false, false, "island",
                       {{"NCCL_IB_HCA", "=mlx5_9"}, {"UCX_NET_DEVICES", "mlx5_9:1"}}});
    }
    if (n >= 4 && n % 2 == 0) {
        out.push_back({"--gpus-per-task=2", all, n / 2, 2, false, false, "closest", {}});
        out.push_back({"--gpus-per-task=2, ranges, membind", all, n / 2, 2, false, true, "closest,membind", {}});
    }
    return out;
}

Node xe8640() {
    return load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
}

// 4 tasks on the XE8640's 4 GPUs, on a host with `host` CPUs.
step::StepSetup xe8640_setup(const std::string& options, const CpuSet& host) {
    step::StepSetup setup;
    setup.env = env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}});
    setup.local_tasks = 4;
    setup.node_name = "n3";
    setup.options = step::parse_gpu_topo(options);
    setup.host_cpus = host;
    setup.affinity = host;
    return setup;
}

}  // namespace

TEST_CASE("plugin and launcher: identical actions on every fixture and Slurm shape", "[step][equal]") {
    int compared = 0, fixtures = 0;
    for (const auto& f : fixture_files()) {
        Node node;
        try {
            node = load_topology_file(f);
        } catch (const std::exception&) {
            continue;  // not a loadable topology (graph dumps, ...): covered by the loader's tests
        }
        if (node.gpus.empty()) continue;
        ++fixtures;
        // Both as a host that has the fixture's CPUs (affinity and memory
        // policy decided) and as one that has not (skipped, and why).
        for (bool on_host : {true, false}) {
            const CpuSet host = on_host ? node.cpus : CpuSet::range(0, 1);
            for (const Shape& s : shapes_for(node)) {
                const step::Options opt = step::parse_gpu_topo(s.options);
                // The plugin: user_init plans once from the step's environment...
                const Env se = step_env(s);
                step::StepSetup setup;
                setup.env = env_of(se);
                setup.options = opt;
                setup.node_name = step::slurm_node_name(setup.env, 0, "host");
                setup.local_tasks = s.tasks;
                setup.host_cpus = host;
                setup.affinity = host;
                const step::StepBinding plugin(setup, node);
                // ...the launcher learns the step's set from the tasks' narrowed sets.
                std::vector<int> learned;
                for (int t = 0; t < s.tasks; ++t)
                    for (int g : step::parse_index_list(task_env(s, t)["SLURM_STEP_GPUS"], "SLURM_STEP_GPUS"))
                        learned.push_back(g);
                std::sort(learned.begin(), learned.end());
                for (int t = 0; t < s.tasks; ++t) {
                    const Getenv te = env_of(task_env(s, t));
                    const step::TaskAction p = plugin.task(t, te);
                    const bool narrowed = launch::gpus_narrowed(te("SLURMD_TRES_BIND"));
                    const launch::TaskPlace place = launch::read_task_place(te, gputopo::host_name());
                    const step::TaskAction l = launch::binding_for(node, opt, te, place, narrowed, learned, host, host);
                    INFO(f << "\n" << s.name << (on_host ? " (on host)" : " (other host)") << " task " << t
                           << "\nplugin:   " << show(p) << "\nlauncher: " << show(l));
                    CHECK(show(p) == show(l));
                    CHECK(p.notes == l.notes);
                    ++compared;
                }
            }
        }
    }
    CHECK(fixtures >= 15);
    CHECK(compared > 500);
}

TEST_CASE("launcher: local tasks learn the step's GPUs from each other", "[step][launcher]") {
    std::string base = std::filesystem::temp_directory_path() / ("gputopo-stepgpus-" + std::to_string(getpid()));
    std::filesystem::create_directories(base);
    chmod(base.c_str(), 0700);
    const int tasks = 4;
    std::vector<std::optional<std::vector<int>>> got(tasks);
    std::vector<std::thread> th;
    for (int t = 0; t < tasks; ++t)
        th.emplace_back([&, t] {
            std::this_thread::sleep_for(std::chrono::milliseconds(10 * (tasks - t)));
            std::string note;
            launch::StepGpusExchange x{base, t, tasks, 5, ""};
            got[static_cast<size_t>(t)] = launch::exchange_step_gpus(x, {2 * t + 4, 2 * t + 5}, note);
        });
    for (auto& t : th) t.join();
    for (const auto& g : got) {
        REQUIRE(g);
        CHECK(*g == std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11});
    }
    for (int t = 0; t < tasks; ++t) launch::forget_step_gpus({base, t, tasks, 5, ""});
    CHECK_FALSE(std::filesystem::exists(base));  // the last one removed the directory
    // A task that never publishes: the others give up and say so.
    std::filesystem::create_directories(base);
    chmod(base.c_str(), 0700);
    std::string note;
    auto alone = launch::exchange_step_gpus({base, 0, 2, 0.05, ""}, {0}, note);
    CHECK_FALSE(alone);
    CHECK_THAT(note, Catch::Contains("1 of 2 local tasks"));
    std::filesystem::remove_all(base);
}

TEST_CASE("launcher: the GPU exchange of an earlier attempt is never read (issue 20, H2)", "[step][launcher]") {
    // A private base of this test's own (--node-state-dir), as /dev/shm would be.
    std::string base = std::filesystem::temp_directory_path() / ("gputopo-h2-" + std::to_string(getpid()));
    std::filesystem::create_directories(base);
    Env attempt0{{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "0"}, {"SLURM_SRUN_COMM_PORT", "40001"}};
    auto env = [](const Env& e) -> Getenv {
        return [e](const std::string& n) -> std::optional<std::string> {
            auto it = e.find(n);
            return it == e.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
    };
    std::string note;
    const std::string dir0 = launch::step_gpus_dir(env(attempt0), "n1", base, note);
    REQUIRE_FALSE(dir0.empty());
    // --node-state-dir is where it goes (issue 20, H4: it was ignored here).
    CHECK(dir0.rfind(base + "/gputopo-launch.", 0) == 0);
    // Attempt 0: task 1 (GPU 1) publishes, then its launcher is SIGKILLed: nothing cleans up.
    launch::StepGpusExchange x1{dir0, 1, 2, 0.05, launch::step_identity(env(attempt0))};
    CHECK_FALSE(launch::exchange_step_gpus(x1, {1}, note));
    // The job is requeued onto the same node: SLURM_RESTART_COUNT=1, a new srun.
    Env attempt1 = attempt0;
    attempt1["SLURM_RESTART_COUNT"] = "1";
    attempt1["SLURM_SRUN_COMM_PORT"] = "40002";
    const std::string dir1 = launch::step_gpus_dir(env(attempt1), "n1", base, note);
    REQUIRE_FALSE(dir1.empty());
    CHECK(dir1 != dir0);
    CHECK(launch::step_identity(env(attempt1)) != launch::step_identity(env(attempt0)));
    CHECK(launch::step_identity(env(attempt1)).find('/') == std::string::npos);
    // Task 0 (GPU 8) must not take attempt 0's task 1 for its partner: it waits and gives up.
    launch::StepGpusExchange x0{dir1, 0, 2, 0.05, launch::step_identity(env(attempt1))};
    auto got = launch::exchange_step_gpus(x0, {8}, note);
    CHECK_FALSE(got);
    CHECK_THAT(note, Catch::Contains("1 of 2 local tasks"));
    // Even an entry copied into this attempt's directory with another identity is refused.
    std::filesystem::copy_file(dir0 + "/1", dir1 + "/1");
    CHECK_FALSE(launch::exchange_step_gpus(x0, {8}, note));
    // And an entry of this very identity written long before this task started
    // (a launcher of the same step that died earlier) is not fresh: refused.
    {
        std::string n;
        launch::exchange_step_gpus({dir1, 1, 2, 0.01, launch::step_identity(env(attempt1))}, {3}, n);
        const std::string stale = dir1 + "/1";
        REQUIRE(std::filesystem::exists(stale));
        const auto old_time = std::filesystem::last_write_time(stale) - std::chrono::hours(1);
        std::filesystem::last_write_time(stale, old_time);
        CHECK_FALSE(launch::exchange_step_gpus(x0, {8}, note));
    }
    // The real partner of this attempt publishes: the union is this attempt's GPUs only.
    std::filesystem::remove(dir1 + "/1");
    std::thread partner([&] {
        std::string n;
        launch::exchange_step_gpus({dir1, 1, 2, 5, launch::step_identity(env(attempt1))}, {9}, n);
    });
    x0.timeout_s = 5;
    got = launch::exchange_step_gpus(x0, {8}, note);
    partner.join();
    REQUIRE(got);
    CHECK(*got == std::vector<int>{8, 9});
    std::filesystem::remove_all(base);
}

TEST_CASE("memory policy: preferred by default, bind only with membind", "[step][mempolicy]") {
    CHECK(step::memory_policy(step::parse_gpu_topo("closest"), {1}) == step::MemPolicy::Preferred);
    CHECK(step::memory_policy(step::parse_gpu_topo("island,verbose"), {0, 1}) == step::MemPolicy::Preferred);
    CHECK(step::memory_policy(step::parse_gpu_topo("closest,membind"), {1}) == step::MemPolicy::Bind);
    CHECK(step::memory_policy(step::parse_gpu_topo("closest,membind"), {}) == step::MemPolicy::None);
    CHECK(step::to_string(step::parse_gpu_topo("closest,membind")) == "closest,membind");

    Node node = xe8640();
    step::StepSetup setup = xe8640_setup("closest", node.cpus);  // as on the node itself
    step::TaskAction a = step::StepBinding(setup, node).task(0, env_of({}));
    REQUIRE(a.apply_affinity);
    REQUIRE_FALSE(a.mems.empty());
    CHECK(a.mempolicy == step::MemPolicy::Preferred);
    CHECK_THAT(a.verbose_line, Catch::Contains("(preferred)"));
    setup.options = step::parse_gpu_topo("closest,membind");
    a = step::StepBinding(setup, node).task(0, env_of({}));
    CHECK(a.mempolicy == step::MemPolicy::Bind);
    CHECK_THAT(a.verbose_line, Catch::Contains("(bind)"));
}

namespace {

// The calling process's memory policy mode (get_mempolicy(2)), -1 on error.
int current_policy_mode() {
    int mode = -1;
    unsigned long mask[16] = {0};
    if (syscall(SYS_get_mempolicy, &mode, mask, 16 * 8 * sizeof(unsigned long), nullptr, 0UL) != 0) return -1;
    return mode;
}

// Applies in a child (the test process keeps its policy); returns the mode seen there.
int policy_after(step::MemPolicy p, const std::vector<int>& mems) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        std::string why = step::apply_mempolicy(p, mems);
        int mode = why.empty() ? current_policy_mode() : -2;
        (void)!write(fds[1], &mode, sizeof mode);
        _exit(0);
    }
    close(fds[1]);
    int mode = -3;
    (void)!read(fds[0], &mode, sizeof mode);
    close(fds[0]);
    waitpid(pid, nullptr, 0);
    return mode;
}

}  // namespace

TEST_CASE("memory policy applied: MPOL_PREFERRED by default, MPOL_BIND with membind", "[step][mempolicy]") {
    REQUIRE(access("/sys/devices/system/node/node0", F_OK) == 0);  // every Linux host has NUMA node 0
    CHECK(policy_after(step::MemPolicy::Preferred, {0}) == 1);      // MPOL_PREFERRED
    CHECK(policy_after(step::MemPolicy::Bind, {0}) == 2);           // MPOL_BIND
    CHECK(policy_after(step::MemPolicy::None, {0}) == 0);           // MPOL_DEFAULT: nothing applied
    CHECK_THAT(step::apply_mempolicy(step::MemPolicy::Preferred, {999}), Catch::Contains("does not exist"));
}

namespace {

// apply_prepared in a child: what it returned, and the CPUs the child then had.
std::pair<std::string, std::string> applied_in_child(const step::PreparedApply& p) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        step::Applied a = step::apply_prepared(p);
        std::string out = (a.cpus ? "cpus;" : "") + a.problem;
        out += "|" + step::current_affinity().to_list();
        (void)!write(fds[1], out.data(), out.size());
        _exit(0);
    }
    close(fds[1]);
    char buf[512] = {0};
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    waitpid(pid, nullptr, 0);
    std::string got(buf, n > 0 ? static_cast<size_t>(n) : 0);
    size_t bar = got.rfind('|');
    return {got.substr(0, bar), bar == std::string::npos ? "" : got.substr(bar + 1)};
}

step::TaskAction action_on(const CpuSet& cpus, std::vector<int> mems) {
    step::TaskAction a;
    a.cpus = cpus;
    a.mems = std::move(mems);
    a.apply_affinity = true;
    a.mempolicy = step::MemPolicy::Preferred;
    return a;
}

}  // namespace

TEST_CASE("prepared before the fork, applied after: the same affinity and the same errors", "[step][apply]") {
    const CpuSet mine = step::current_affinity();
    REQUIRE(!mine.empty());
    const CpuSet one = CpuSet::range(mine.to_vector().front(), mine.to_vector().front());

    auto fine = applied_in_child(step::prepare_apply(action_on(one, {0})));
    CHECK(fine.first == "cpus;");
    CHECK(fine.second == one.to_list());

    // A NUMA node this host lacks: the CPUs are still bound, and the one line
    // says so: what was applied (the CPUs) and what was not (the memory policy).
    auto no_node = applied_in_child(step::prepare_apply(action_on(one, {999})));
    CHECK(no_node.first == "cpus;CPUs " + one.to_list() +
                               " applied; memory policy not applied: NUMA node 999 does not exist on this host");
    CHECK(no_node.second == one.to_list());

    // A CPU beyond the CPU set: nothing applied, the error names the CPU.
    auto too_far = applied_in_child(step::prepare_apply(action_on(CpuSet::range(CPU_SETSIZE, CPU_SETSIZE), {0})));
    CHECK_THAT(too_far.first, Catch::StartsWith("affinity not applied: ") && Catch::Contains("beyond this host's CPU set size"));
    CHECK(too_far.second == mine.to_list());

    // Not to be applied (another host's topology, the user's --cpu-bind): nothing done.
    step::TaskAction skip = action_on(one, {0});
    skip.apply_affinity = false;
    auto skipped = applied_in_child(step::prepare_apply(skip));
    CHECK(skipped.first == "");
    CHECK(skipped.second == mine.to_list());
}

TEST_CASE("Slurm GPU lists: ranges are bounded, never expanded beyond a node (finding 3)", "[step][bounds]") {
    // What a user could put in SLURM_STEP_GPUS / CUDA_VISIBLE_DEVICES: once
    // 2.1 GB and 37 s of slurmstepd's memory and time.
    std::string bomb;
    for (int i = 0; i < 455; ++i) bomb += (i ? "," : "") + std::string("0-999999");
    auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(step::parse_index_list(bomb, "SLURM_STEP_GPUS"), Catch::Contains("beyond what a node can have"));
    CHECK_THROWS_AS(step::read_step_inputs(env_of({{"SLURM_STEP_GPUS", bomb}})), ParseError);
    // The largest list that is accepted: every index a node can have, many times.
    std::string wide;
    for (int i = 0; i < 4000; ++i) wide += (i ? "," : "") + std::string("0-1023");
    std::vector<int> all = step::parse_index_list(wide, "V");
    CHECK(all.size() == static_cast<size_t>(step::kMaxGpuIndex));
    CHECK(all.back() == step::kMaxGpuIndex - 1);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s < 2.0);
    CHECK(step::parse_index_list("3,1-2,2", "V") == std::vector<int>{1, 2, 3});
    CHECK_THROWS_AS(step::parse_index_list("1024", "V"), ParseError);
}

TEST_CASE("job environment values over 4 KiB are read whole, not taken as unset (finding 13)", "[spank][bounds]") {
    // A reader that behaves as spank_getenv: truncates and says so.
    auto reader = [](const std::string& value) {
        return [value](char* buf, size_t len) {
            if (value.size() + 1 > len) {
                std::memcpy(buf, value.data(), len - 1);
                buf[len - 1] = '\0';
                return spank::EnvRead::TooSmall;
            }
            std::memcpy(buf, value.c_str(), value.size() + 1);
            return spank::EnvRead::Ok;
        };
    };
    const std::string big(5000, 'x');
    CHECK(spank::read_env_value("NCCL_IB_HCA", reader(big)) == std::optional<std::string>(big));
    const std::string bigger(300000, 'y');
    CHECK(spank::read_env_value("V", reader(bigger)) == std::optional<std::string>(bigger));
    CHECK_THROWS_WITH(spank::read_env_value("HUGE", reader(std::string(spank::kMaxJobEnvValue + 1, 'z'))),
                      Catch::Contains("HUGE") && Catch::Contains("longer than"));
    // Exactly the limit fits (issue 20, H9: it was refused as "longer than 1024 KiB").
    const std::string limit(spank::kMaxJobEnvValue, 'w');
    CHECK(spank::read_env_value("LIMIT", reader(limit)) == std::optional<std::string>(limit));
    CHECK_THROWS_WITH(spank::read_env_value("HUGE", reader(std::string(spank::kMaxJobEnvValue + 1, 'z'))),
                      Catch::Contains("longer than 1048576 bytes"));
    CHECK_FALSE(spank::read_env_value("NONE", [](char*, size_t) { return spank::EnvRead::Missing; }));
}

TEST_CASE("strict fails for a binding not applied, never for the user's own --cpu-bind", "[step][strict]") {
    Node node = xe8640();
    step::StepSetup setup = xe8640_setup("closest,strict", CpuSet::range(0, 3));  // not the fixture's CPUs
    step::TaskAction off_host = step::StepBinding(setup, node).task(0, env_of({}));
    CHECK_THAT(step::binding_failure(off_host, {}), Catch::Contains("are not this host's"));
    setup.host_cpus = node.cpus;
    setup.affinity = node.cpus;
    step::TaskAction here = step::StepBinding(setup, node).task(0, env_of({}));
    CHECK(step::binding_failure(here, {true, ""}).empty());
    CHECK_THAT(step::binding_failure(here, {false, "affinity not applied: sched_setaffinity(1): Invalid argument"}),
               Catch::StartsWith("affinity not applied: sched_setaffinity"));
    setup.env = env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}, {"SLURM_CPU_BIND", "quiet,map_cpu:1,2,3,4"},
                        {"SLURM_CPU_BIND_TYPE", "map_cpu:"}});
    step::TaskAction user = step::StepBinding(setup, node).task(0, env_of({}));
    CHECK(user.user_bound);
    CHECK_FALSE(user.apply_affinity);
    CHECK(step::binding_failure(user, {}).empty());
}
