// gputopo run: the batch script's step with hot spares and in-job restart.
// Thin front end: the logic is in run/.
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "run/job_options.hpp"
#include "run/job_run.hpp"

namespace gputopo::cli {

int cmd_run(const std::vector<std::string>& args, std::ostream& out) {
    launch::job::JobOptions o;
    try {
        o = launch::job::parse_job_options(args);
    } catch (const launch::job::JobUsageError& e) {
        throw UsageError(e.what());
    }
    if (o.help) {
        out << launch::job::job_usage();
        return 0;
    }
    out.flush();
    return launch::job::run_job(o);
}

}  // namespace gputopo::cli
