#pragma once
// A task environment for tests: a map read through step::Getenv.
#include <map>
#include <optional>
#include <string>

#include "step/step_inputs.hpp"

namespace gputopo_test {

using Env = std::map<std::string, std::string>;

inline gputopo::step::Getenv env_of(const Env& m) {
    return [m](const std::string& n) -> std::optional<std::string> {
        auto it = m.find(n);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}

}  // namespace gputopo_test
