// One environment variable a task is to get: the plan's appliers (the plugin,
// the launcher) and the framework variables all speak in these.
#pragma once

#include <string>

namespace gputopo {

struct EnvVar {
    std::string name;
    std::string value;
    bool user_wins = false;      // a value already in the environment is kept
};

}  // namespace gputopo
