#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/unit/fixtures.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/nvml_fake.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "step/option_parser.hpp"
#include "spank/plugstack_args.hpp"
#include "step/step_inputs.hpp"
#include "step/step_binding.hpp"
#include "step/topology_path.hpp"
#include "step/topology_cache.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
using namespace gputopo::spank;
using namespace gputopo::step;

namespace {

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ParseError& e) {
        return e.what();
    }
    return "(no error)";
}

Getenv env_of(const std::map<std::string, std::string>& m) {
    return [m](const std::string& n) -> std::optional<std::string> {
        auto it = m.find(n);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}

}  // namespace

TEST_CASE("--gpu-topo modes and flags", "[spank]") {
    Options o = parse_gpu_topo("island");
    CHECK(o.mode == Mode::Island);
    CHECK_FALSE(o.verbose);
    o = parse_gpu_topo("closest,verbose,strict,isolate");
    CHECK(o.mode == Mode::Closest);
    CHECK(o.verbose);
    CHECK(o.strict);
    CHECK(o.isolate);
    CHECK_FALSE(o.share);
    CHECK(to_string(o) == "closest,verbose,strict,isolate");
    CHECK(parse_gpu_topo("none").mode == Mode::None);
    CHECK(parse_gpu_topo("island,share").share);
    CHECK(parse_gpu_topo("help").help);
    CHECK(parse_gpu_topo("island,help").help);
    CHECK(parse_gpu_topo("closest,wholecores").whole_cores);
    CHECK_FALSE(parse_gpu_topo("closest").whole_cores);
    CHECK(to_string(parse_gpu_topo("closest,wholecores")) == "closest,wholecores");
}

TEST_CASE("--gpu-topo bad values give one message naming the word and the choices", "[spank]") {
    CHECK(message_of([] { parse_gpu_topo("x"); }) ==
          "unknown mode 'x' in --gpu-topo=x (expected none, closest or island; flags: verbose, strict, "
          "isolate, share, membind, wholecores, noframework, help)");
    std::string m = message_of([] { parse_gpu_topo("island,loud"); });
    CHECK(m.find("unknown flag 'loud' in --gpu-topo=island,loud") != std::string::npos);
    CHECK(m.find("verbose, strict, isolate, share") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo(""); }).find("empty value") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("island,,verbose"); }).find("empty word") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("island,closest"); }).find("second mode 'closest'") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("island,isolate,share"); }).find("exclude each other") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("Island"); }).find("unknown mode 'Island'") != std::string::npos);
    CHECK(help_text().find("island") != std::string::npos);
}

TEST_CASE("--gpu-topo: did you mean for mistyped values, blanks around commas accepted", "[spank]") {
    CHECK(message_of([] { parse_gpu_topo("closet"); }).find("unknown mode 'closet' in --gpu-topo=closet (did you mean closest?") !=
          std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("island,verbos"); }).find("unknown flag 'verbos'") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("island,verbos"); }).find("did you mean verbose?") != std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("verbos"); }).find("a mode comes first: did you mean closest,verbose?") !=
          std::string::npos);
    CHECK(message_of([] { parse_gpu_topo("x"); }).find("did you mean") == std::string::npos);
    // Blanks around commas: the same options as without them.
    for (const auto& [spaced, plain] : std::vector<std::pair<std::string, std::string>>{
             {"closest, verbose", "closest,verbose"}, {" island ,\tstrict , share", "island,strict,share"}}) {
        INFO("'" << spaced << "'");
        CHECK(to_string(parse_gpu_topo(spaced)) == plain);
    }
    CHECK(message_of([] { parse_gpu_topo("island, ,verbose"); }).find("empty word") != std::string::npos);
}

TEST_CASE("plugstack.conf arguments", "[spank]") {
    PluginConfig c = parse_plugstack_args({"default=closest,verbose", "topology=/etc/gputopo/%n.xml", "cache=/var/cache/gputopo"});
    CHECK(c.defaults.mode == Mode::Closest);
    CHECK(c.defaults.verbose);
    CHECK(c.topology == "/etc/gputopo/%n.xml");
    CHECK(c.cache_dir == "/var/cache/gputopo");
    PluginConfig empty = parse_plugstack_args({});
    CHECK(empty.defaults.mode == Mode::None);
    CHECK(empty.topology.empty());
    std::vector<std::string> keys = plugstack_keys();
    for (const char* k : {"default", "topology", "cache", "readers", "wrap"})
        CHECK(std::find(keys.begin(), keys.end(), k) != keys.end());
}

TEST_CASE("plugstack.conf: unknown keys and bad values are one clear error", "[spank]") {
    CHECK(message_of([] { parse_plugstack_args({"topolgy=/x"}); }).find("unknown argument 'topolgy'") != std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"verbose"}); }).find("'verbose' is not KEY=VALUE") != std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"topology=relative/%n.xml"}); }).find("must be an absolute path") !=
          std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"cache="}); }).find("must be an absolute path") != std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"readers=gputopo-readers.so"}); }).find("readers=gputopo-readers.so must be an absolute path") !=
          std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"wrap=gputopo-launch"}); }).find("wrap=gputopo-launch must be an absolute path") !=
          std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"default=fast"}); }).find("unknown mode 'fast' in plugstack.conf default=fast") !=
          std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"topology=/x/%q.xml"}); }).find("unknown '%q'") != std::string::npos);
    CHECK(message_of([] { parse_plugstack_args({"cache=/a", "cache=/b"}); }).find("given twice") != std::string::npos);
    // nvml_timeout= (issue 20, H6): seconds in (0, 600].
    CHECK(parse_plugstack_args({"nvml_timeout=2.5"}).nvml_timeout_s == Approx(2.5));
    CHECK(live_sources(parse_plugstack_args({"nvml_timeout=3"})).nvml_timeout_s == Approx(3));
    CHECK(parse_plugstack_args({}).nvml_timeout_s == Approx(kDefaultNvmlTimeoutS));
    for (const char* bad : {"nvml_timeout=0", "nvml_timeout=-1", "nvml_timeout=601", "nvml_timeout=10s", "nvml_timeout=",
                            "nvml_timeout=nan"})
        CHECK(message_of([&] { parse_plugstack_args({bad}); }).find("expected seconds NVML may take") != std::string::npos);
}

TEST_CASE("topology path patterns: %n, %h, %% and nothing else", "[spank]") {
    CHECK(expand_path("/t/%n.xml", "n1", "host1") == "/t/n1.xml");
    CHECK(expand_path("/t/%h/%n-100%%.xml", "gpu07", "gpu07.cluster") == "/t/gpu07.cluster/gpu07-100%.xml");
    CHECK_THROWS_AS(expand_path("/t/%n.xml", "../etc", "h"), ParseError);
    CHECK_THROWS_AS(expand_path("/t/%n.xml", "", "h"), ParseError);
    CHECK_THROWS_AS(expand_path("/t/%", "n", "h"), ParseError);
}

TEST_CASE("step inputs: the step's GPUs and how Slurm numbered them", "[spank]") {
    StepInputs in = read_step_inputs(env_of({{"SLURM_STEP_GPUS", "4,5,6,7"}, {"CUDA_VISIBLE_DEVICES", "4,5,6,7"}}));
    CHECK(in.gpus == std::vector<int>{4, 5, 6, 7});
    CHECK(in.gpus_from == "SLURM_STEP_GPUS");
    CHECK_FALSE(in.relative_numbering);
    // ConstrainDevices: CUDA_VISIBLE_DEVICES counts 0..k-1.
    in = read_step_inputs(env_of({{"SLURM_STEP_GPUS", "2,6"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
    CHECK(in.relative_numbering);
    // Batch step: SLURM_JOB_GPUS.
    in = read_step_inputs(env_of({{"SLURM_JOB_GPUS", "1-3"}}));
    CHECK(in.gpus == std::vector<int>{1, 2, 3});
    CHECK(in.gpus_from == "SLURM_JOB_GPUS");
    // Only CUDA_VISIBLE_DEVICES; UUIDs are not indices.
    in = read_step_inputs(env_of({{"CUDA_VISIBLE_DEVICES", "3,1"}}));
    CHECK(in.gpus == std::vector<int>{1, 3});
    in = read_step_inputs(env_of({{"CUDA_VISIBLE_DEVICES", "GPU-8f0c2c3e-1b2a"}}));
    CHECK(in.gpus.empty());
    // task/affinity's automatic binding looks like --cpu-bind=cores in the task:
    // mask_cpu without what srun recorded is Slurm's, not the user's.
    in = read_step_inputs(env_of({{"SLURM_CPUS_PER_TASK", "7"}, {"SLURM_CPU_BIND", "quiet,mask_cpu:0x3,0xc"},
                                  {"SLURM_CPU_BIND_TYPE", "mask_cpu:"}}));
    CHECK(in.cpus_per_task == 7);
    CHECK(in.cpu_request == CpuBindRequest::Slurm);
    in = read_step_inputs(env_of({{"SLURM_CPU_BIND", "quiet,mask_cpu:0x3,0xc"}, {"SLURM_CPU_BIND_TYPE", "mask_cpu:"},
                                  {"GPUTOPO_CPU_BIND", "cores"}}));
    CHECK(in.cpu_request == CpuBindRequest::User);
    CHECK(in.user_cpu_bind == "cores");
    CHECK(read_step_inputs(env_of({{"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"GPUTOPO_CPU_BIND", ""}})).cpu_request ==
          CpuBindRequest::Slurm);
    CHECK(read_step_inputs(env_of({{"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"GPUTOPO_CPU_BIND", "verbose"}}))
              .cpu_request == CpuBindRequest::Slurm);
    CHECK(read_step_inputs(env_of({{"SLURM_CPU_BIND", "quiet,none"}, {"SLURM_CPU_BIND_TYPE", "none"}})).cpu_request ==
          CpuBindRequest::None);
    CHECK(read_step_inputs(env_of({{"GPUTOPO_CPU_BIND", "verbose,none"}})).cpu_request == CpuBindRequest::None);
    CHECK(read_step_inputs(env_of({{"SLURM_CPU_BIND_TYPE", "map_cpu:"}})).cpu_request == CpuBindRequest::User);
    CHECK(read_step_inputs(env_of({{"SLURM_CPU_BIND_TYPE", "mask_ldom:"}})).cpu_request == CpuBindRequest::User);
    CHECK_THROWS_WITH(read_step_inputs(env_of({{"SLURM_STEP_GPUS", "0,x"}})),
                      Catch::Contains("SLURM_STEP_GPUS='0,x' is not a list of GPU indices"));
    CHECK_THROWS_AS(parse_index_list("3-1", "V"), ParseError);
}

TEST_CASE("step inputs: Slurm node name", "[spank]") {
    // Before a task starts, SLURMD_NODENAME in the job's environment is the
    // user's (slurmstepd sets it per task): never taken from there.
    CHECK(slurm_node_name(env_of({{"SLURMD_NODENAME", "gpu7"}}), 0, "h") == "h");
    CHECK(slurm_node_name(env_of({{"SLURMD_NODENAME", "../../etc"}, {"SLURM_STEP_NODELIST", "a,b"}}), 1, "h") == "b");
    CHECK(slurm_node_name(env_of({{"SLURM_STEP_NODELIST", "gpu[001-004]"}}), 2, "h") == "gpu003");
    CHECK(slurm_node_name(env_of({{"SLURM_JOB_NODELIST", "a,b"}}), 1, "h") == "b");
    CHECK(slurm_node_name(env_of({{"SLURM_STEP_NODELIST", "a,b"}}), 5, "h") == "h");
    CHECK(slurm_node_name(env_of({}), 0, "host") == "host");
}

TEST_CASE("allowed CPUs only when the topology's CPUs are this host's", "[spank]") {
    Node node;
    node.cpus = CpuSet::range(0, 7);
    CHECK(topology_cpus_on_host(node, CpuSet::range(0, 15)));
    CHECK_FALSE(topology_cpus_on_host(node, CpuSet::range(0, 3)));
    auto a = allowed_cpus(node, CpuSet::range(0, 15), CpuSet::parse_list("2-5,9"));
    REQUIRE(a);
    CHECK(a->to_list() == "2-5");
    CHECK_FALSE(allowed_cpus(node, CpuSet::range(0, 3), CpuSet::range(0, 3)));
}

TEST_CASE("task binding on the XE8640: env, visibility, affinity decision, verbose line", "[spank]") {
    Node node = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    StepSetup setup;
    setup.env = env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}});
    setup.options = parse_gpu_topo("island,verbose");
    setup.node_name = "n3";
    setup.local_tasks = 4;
    setup.host_cpus = CpuSet::range(0, 3);  // a host without the fixture's CPUs
    setup.affinity = setup.host_cpus;
    StepBinding binding(setup, node);
    const Plan& plan = binding.plan();
    REQUIRE(plan.tasks.size() == 4);
    StepInputs in = read_step_inputs(setup.env);
    CHECK_FALSE(plan_request(in, 4, setup.options.mode, std::nullopt).whole_cores);
    CHECK(plan_request(in, 4, setup.options.mode, std::nullopt, parse_gpu_topo("closest,wholecores").whole_cores).whole_cores);
    for (int t = 0; t < 4; ++t) {
        TaskAction a = binding.task(t, env_of({{"NCCL_IB_HCA", "mlx5_3"}}));
        const TaskBinding& b = plan.tasks[static_cast<size_t>(t)];
        std::map<std::string, std::string> set;
        for (const auto& v : a.set) set[v.name] = v.value;
        // position = local task id holds the task's planned GPU
        REQUIRE(a.visible.size() == 4);
        CHECK(a.visible[static_cast<size_t>(t)] == b.gpus[0]);
        CHECK(set["GPUTOPO_CPUS"] == b.cpus.to_list());
        CHECK(set.count("NCCL_IB_HCA") == 0);  // the user's value is kept
        REQUIRE(a.kept.size() == 1);
        CHECK_FALSE(a.apply_affinity);  // the fixture's CPUs are not this host's
        CHECK(a.mempolicy == MemPolicy::None);
        CHECK(a.skip_reason.find("not this host's") != std::string::npos);
        CHECK(a.verbose_line.rfind("n3 task " + std::to_string(t) + ": gpus=" + std::to_string(b.gpus[0]) +
                                       " (" + b.gpu_pci[0].to_string() + ") cpus=" + b.cpus.to_list(),
                                   0) == 0);
        CHECK(a.verbose_line.find("kept user's NCCL_IB_HCA=mlx5_3") != std::string::npos);
    }
    // On a host that has the CPUs, affinity is applied unless the user bound explicitly.
    setup.host_cpus = node.cpus;
    setup.affinity = node.cpus;
    TaskAction here = StepBinding(setup, node).task(0, env_of({}));
    CHECK(here.apply_affinity);
    auto env = setup.env;
    setup.env = [env](const std::string& n) -> std::optional<std::string> {
        if (n == "SLURM_CPU_BIND") return std::string("quiet,map_cpu:1");
        if (n == "GPUTOPO_CPU_BIND") return std::string("map_cpu:1");  // what srun recorded
        return env(n);
    };
    // The user's binding is kept; the task's memory follows the NUMA node of the
    // CPU it runs on (the task's own affinity), not the planned one.
    CpuSet on;
    on.set(node.numa_nodes.back().cpus.first());
    TaskAction kept = StepBinding(setup, node).task(0, env_of({}), &on);
    CHECK_FALSE(kept.apply_affinity);
    CHECK(kept.apply_memory);
    CHECK(kept.cpus == on);
    CHECK(kept.mems == std::vector<int>{node.numa_nodes.back().os_index});
    CHECK(kept.mempolicy == MemPolicy::Preferred);
    CHECK(kept.skip_reason.find("map_cpu:1") != std::string::npos);
    // Without the task's affinity there is nothing to follow: no memory policy.
    TaskAction blind = StepBinding(setup, node).task(0, env_of({}));
    CHECK_FALSE(blind.apply_memory);
    CHECK(blind.mempolicy == MemPolicy::None);
    CHECK_THROWS_AS(StepBinding(setup, node).task(4, env_of({})), PlanError);
}

TEST_CASE("--gpu-topo with a control character is refused, shown escaped (issue 33, finding 13)", "[spank]") {
    for (const char* v : {"island\nslurmctld: error: forged", "closest,verbose\r", "island,tp=8\x1b[2K", "\x7f"}) {
        INFO(printable(v));
        try {
            parse_gpu_topo(v, "--gpu-topo=");
            FAIL("accepted");
        } catch (const ParseError& e) {
            const std::string msg = e.what();
            CHECK(msg.find('\n') == std::string::npos);
            CHECK(msg.find('\r') == std::string::npos);
            CHECK(msg.find('\x1b') == std::string::npos);
            CHECK_THAT(msg, Catch::StartsWith("a control character in --gpu-topo="));
        }
    }
    CHECK(printable("a\nb\\c\x01") == "a\\nb\\\\c\\x01");
}

TEST_CASE("topology cache: atomic write, freshness by boot id and driver", "[spank]") {
    char tmpl[] = "/tmp/gputopo-cache-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    std::string dir = tmpl;
    CacheStamp now = current_stamp();
    CHECK_FALSE(now.boot_id.empty());
    CHECK_FALSE(cache_fresh(dir, "h", now));
    write_file_atomically(cache_xml_path(dir, "h"), "<topology/>\n");
    write_file_atomically(cache_meta_path(dir, "h"), now.to_text());
    CHECK_FALSE(cache_fresh(dir, "h", now));  // the metadata before issue 33: refreshed once
    write_file_atomically(cache_meta_path(dir, "h"), cache_meta_text(now, true, time(nullptr)));
    CHECK(cache_fresh(dir, "h", now));
    CacheStamp rebooted = now;
    rebooted.boot_id = "another-boot";
    CHECK_FALSE(cache_fresh(dir, "h", rebooted));
    CacheStamp new_driver = now;
    new_driver.driver = "NVRM version: 999";
    CHECK_FALSE(cache_fresh(dir, "h", new_driver));
    CHECK_THROWS_AS(write_file_atomically(dir + "/no/such/dir/file", "x"), TopologyError);
    unlink(cache_xml_path(dir, "h").c_str());
    unlink(cache_meta_path(dir, "h").c_str());
    CHECK(rmdir(dir.c_str()) == 0);  // no temporary file was left behind
}

TEST_CASE("cache= on a file system that takes no write: the node just discovered is used (issue 20, H5)", "[spank]") {
    if (geteuid() != 0) {
        WARN("needs root (check_cache_dir wants a root-owned cache directory)");
        return;
    }
    char tmpl[] = "/tmp/gputopo-cache-h5.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    // Every write fails as on a full or read-only file system: the temporary
    // file write_file_atomically would create is already there (a directory).
    const std::string blocker = cache_xml_path(dir, "h") + ".tmp." + std::to_string(getpid());
    REQUIRE(mkdir(blocker.c_str(), 0755) == 0);
    LiveSources live;
    live.nvml = false;
    live.nic_state = false;
    std::string unwritten;
    Node node = load_cached_topology(dir, "h", live, &unwritten);
    CHECK_FALSE(node.cpus.empty());  // this machine, discovered
    CHECK_THAT(unwritten, Catch::Contains("cannot write " + cache_xml_path(dir, "h") + ": "));
    CHECK_THAT(unwritten, Catch::Contains("(through the temporary file " + blocker + ")"));
    CHECK_FALSE(cache_fresh(dir, "h", current_stamp()));
    // Without somewhere to put the reason, the caller asked for the old behaviour: an error.
    CHECK_THROWS_AS(refresh_cache(dir, "h", live), TopologyError);
    // Once per boot: the first caller creates the marker, the others see it.
    const std::string marker = dir + "/warned";
    CHECK(first_this_boot(marker));
    CHECK_FALSE(first_this_boot(marker));
    REQUIRE(rmdir(blocker.c_str()) == 0);
    unlink(marker.c_str());
    CHECK(rmdir(dir.c_str()) == 0);  // nothing else was written
}

TEST_CASE("cache= written while NVML hung is rediscovered after a short while, not kept for the boot (issue 33, finding 8)",
          "[spank][nvml]") {
    if (geteuid() != 0) {
        WARN("needs root (check_cache_dir wants a root-owned cache directory)");
        return;
    }
    const std::string lib = gputopo_test::fake_nvml_library();
    REQUIRE(gputopo_test::file_exists(lib));
    char tmpl[] = "/tmp/gputopo-cache-f8.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    // In a child: the thread stuck in the fake nvmlInit stays behind, and this
    // process's later NVML calls would all be refused.
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(60);
        setenv("GPUTOPO_FAKE_NVML_FIXTURE", gputopo_test::nvml_fixture("init-hangs.nvml").c_str(), 1);
        LiveSources live;
        live.nvml_library = lib;
        live.nvml_timeout_s = 0.5;
        live.nic_state = false;
        int bad = 0;
        refresh_cache(dir, "h", live);
        const CacheStamp stamp = current_stamp();
        const std::string meta = gputopo_test::slurp(cache_meta_path(dir, "h"));
        if (meta.find("live=incomplete until=") == std::string::npos) bad |= 1;
        if (!cache_fresh(dir, "h", stamp)) bad |= 2;  // the next steps of the next two minutes reuse it
        // Past its time: stale, the next step discovers again (before: fresh until reboot).
        write_file_atomically(cache_meta_path(dir, "h"), cache_meta_text(stamp, false, time(nullptr) - kIncompleteCacheLifeS - 1));
        if (cache_fresh(dir, "h", stamp)) bad |= 4;
        // A time further ahead than one life is not believed.
        write_file_atomically(cache_meta_path(dir, "h"), cache_meta_text(stamp, false, time(nullptr) + 86400));
        if (cache_fresh(dir, "h", stamp)) bad |= 8;
        // NVML not asked for: complete, kept for the boot.
        live.nvml = false;
        refresh_cache(dir, "h", live);
        if (gputopo_test::slurp(cache_meta_path(dir, "h")).find("live=complete\n") == std::string::npos) bad |= 16;
        if (!cache_fresh(dir, "h", stamp)) bad |= 32;
        _exit(bad);
    }
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    INFO("child status " << st << " (bits: 1 not marked, 2 not reused at once, 4 reused past its time, 8 far future "
                                  "believed, 16 complete not marked, 32 complete not fresh)");
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    for (const char* f : {".xml", ".snap", ".meta"}) unlink((dir + "/h" + f).c_str());
    CHECK(rmdir(dir.c_str()) == 0);
}

TEST_CASE("node snapshot round-trips every fixture: same text, same plans", "[spank]") {
    int loaded = 0;
    for (const char* sub : {"hwloc", "nccl"}) {
        for (const auto& entry : std::filesystem::directory_iterator(gputopo_test::topologies_dir() + "/" + sub)) {
            if (entry.path().extension() != ".xml") continue;
            Node node;
            try {
                node = load_topology_file(entry.path().string());
            } catch (const TopologyError&) {
                continue;  // files that are not full topologies have their own tests
            }
            INFO(entry.path().string());
            ++loaded;
            std::string text = write_node_snapshot(node);
            Node back = read_node_snapshot(text, "snapshot");
            CHECK(write_node_snapshot(back) == text);
            CHECK(back.gpus.size() == node.gpus.size());
            CHECK(back.nics.size() == node.nics.size());
            std::vector<int> all;
            for (const auto& g : node.gpus) all.push_back(g.index);
            for (Mode m : {Mode::Closest, Mode::Island}) {
                PlanRequest r;
                r.gpus = all;
                r.ntasks = static_cast<int>(all.size());
                r.mode = m;
                CHECK(plan_json(make_plan(back, r), 0) == plan_json(make_plan(node, r), 0));
            }
        }
    }
    CHECK(loaded >= 20);
    CHECK_THROWS_WITH(read_node_snapshot("hello\n", "x.snap"), Catch::Contains("x.snap is not a gputopo node snapshot"));
    CHECK_THROWS_WITH(read_node_snapshot("gputopo-node-snapshot\t1\nnode\t%0\t%0\t0-3\n", "t.snap"),
                      Catch::Contains("truncated"));
}

TEST_CASE("topology file read through a snapshot: written once, reused, refreshed when the file changes", "[spank]") {
    char tmpl[] = "/tmp/gputopo-snap-test.XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    std::string dir = tmpl;
    std::string src = gputopo_test::topology("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml");
    std::string copy = dir + "/n2.xml";
    {
        std::ifstream i(src, std::ios::binary);
        std::ofstream o(copy, std::ios::binary);
        o << i.rdbuf();
    }
    Node direct = load_topology_file(copy);
    Node first = load_topology_via_snapshot(copy, dir);
    std::string flat = copy;
    for (char& c : flat)
        if (c == '/') c = '_';
    std::string snap = dir + "/topo-" + flat + ".snap";
    REQUIRE(access(snap.c_str(), R_OK) == 0);
    CHECK(write_node_snapshot(first) == write_node_snapshot(direct));
    // A planted snapshot with the right key is what is read (proves reuse).
    std::ifstream sf(snap);
    std::string key;
    std::getline(sf, key);
    {
        std::ofstream o(snap, std::ios::trunc);
        Node tiny;
        tiny.hostname = "from-snapshot";
        o << key << "\n" << write_node_snapshot(tiny);
    }
    CHECK(load_topology_via_snapshot(copy, dir).hostname == "from-snapshot");
    // Touching the file (new mtime) invalidates the snapshot.
    {
        std::ofstream o(copy, std::ios::app);
        o << "\n";
    }
    CHECK(load_topology_via_snapshot(copy, dir).gpus.size() == direct.gpus.size());
    unlink(snap.c_str());
    unlink(copy.c_str());
    CHECK(rmdir(dir.c_str()) == 0);
}
