#include "spank/job_env.hpp"

#include <algorithm>
#include <vector>

#include "topo/core/errors.hpp"

namespace gputopo::spank {

std::optional<std::string> read_env_value(const std::string& name,
                                          const std::function<EnvRead(char* buf, size_t len)>& read) {
    std::vector<char> buf(4096);
    for (;;) {
        buf.back() = '\0';
        switch (read(buf.data(), buf.size())) {
        case EnvRead::Ok:
            buf.back() = '\0';
            return std::string(buf.data());
        case EnvRead::Missing:
            return std::nullopt;
        case EnvRead::TooSmall:
            break;
        }
        // The last buffer holds a value of exactly kMaxJobEnvValue bytes and
        // its NUL (issue 20, H9: 1 MiB itself was refused).
        if (buf.size() > kMaxJobEnvValue)
            throw ParseError(name + " in the job's environment is longer than " + std::to_string(kMaxJobEnvValue) +
                             " bytes (1 MiB)");
        buf.resize(std::min(buf.size() * 4, kMaxJobEnvValue + 1));
    }
}

}  // namespace gputopo::spank
