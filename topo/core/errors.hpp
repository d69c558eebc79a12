// The project's exception types. Every message names the input it is about
// and what was expected, so it can be shown to a user as it is.
#pragma once

#include <stdexcept>
#include <string>

namespace gputopo {

// Malformed text: an option string, a config line, a cpulist, a hostlist.
class ParseError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A topology that cannot be read or makes no sense (missing file, not XML,
// not a topology, no GPUs, unsupported format version).
class TopologyError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A request the planner cannot honour (GPU index not on the node, ...).
class PlanError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace gputopo
