// The step environment (step/step_inputs.cpp): the input is NAME=VALUE lines,
// the environment read_step_inputs and slurm_node_name see, and the launcher's
// task place (SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE, SLURM_NODEID: ranges
// checked, counts capped). The whole input is also read as a cgroup.conf.
#include <map>

#include "fuzz/fuzz_common.hpp"
#include "launcher/env/binding.hpp"
#include "step/device_scope.hpp"
#include "step/step_inputs.hpp"
#include "topo/core/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::map<std::string, std::string> env;
    for (const std::string& line : gputopo::split_fields(gputopo_fuzz::text_of(data, size), '\n')) {
        size_t eq = line.find('=');
        if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    gputopo::step::Getenv get = [&](const std::string& k) -> std::optional<std::string> {
        auto it = env.find(k);
        if (it == env.end()) return std::nullopt;
        return it->second;
    };
    gputopo_fuzz::expect_clean([&] { gputopo::step::read_step_inputs(get); });
    gputopo_fuzz::expect_clean([&] {
        for (int id : {0, 1, 7, 100000}) gputopo::step::slurm_node_name(get, id, "host");
    });
    gputopo::launch::TaskPlace place = gputopo::launch::read_task_place(get, "host");  // never throws
    if (place.local_id < 0 || place.local_tasks < 1 || place.local_tasks > 4096 || place.local_id >= place.local_tasks)
        __builtin_trap();
    (void)gputopo::step::cgroup_conf_constrains_devices(gputopo_fuzz::text_of(data, size));  // never throws
    return 0;
}
