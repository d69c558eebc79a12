#include "spank/job_env.hpp"

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
        if (buf.size() >= kMaxJobEnvValue)
            throw ParseError(name + " in the job's environment is longer than " +
                             std::to_string(kMaxJobEnvValue / 1024) + " KiB");
        buf.resize(buf.size() * 4);
    }
}

}  // namespace gputopo::spank
