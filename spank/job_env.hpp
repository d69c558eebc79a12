// Reading one variable of the job's environment through a fixed-size-buffer
// call (spank_getenv): a value that does not fit is read again with a larger
// buffer, never taken as unset. Slurm-free so it can be tested.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace gputopo::spank {

enum class EnvRead { Ok, Missing, TooSmall };

// The largest value read; a longer one throws ParseError naming the variable.
constexpr size_t kMaxJobEnvValue = size_t{1} << 20;

// `read(buf, len)` fills buf (NUL-terminated) as spank_getenv does and says
// whether the value fit. Starts with 4 KiB and grows 4x up to kMaxJobEnvValue.
std::optional<std::string> read_env_value(const std::string& name,
                                          const std::function<EnvRead(char* buf, size_t len)>& read);

}  // namespace gputopo::spank
