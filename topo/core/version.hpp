// The project's version, one definition for every front end's --version.
#pragma once

namespace gputopo {

inline constexpr const char* kVersion = "0.2.0";

}  // namespace gputopo
