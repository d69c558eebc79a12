// What the launcher reads from Slurm (launcher/slurm_ctl.cpp, requeue.cpp):
// an `scontrol show job -o` record and the job's fields from it, a time, a
// `scontrol show config` KillWait, and the Comment's exclusion record merged
// with a node.
#include "fuzz/fuzz_common.hpp"
#include "launcher/requeue.hpp"
#include "launcher/slurm_ctl.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text = gputopo_fuzz::text_of(data, size);
    gputopo_fuzz::expect_clean([&] {
        auto fields = gputopo::launch::parse_scontrol_record(text);
        gputopo::launch::JobInfo job = gputopo::launch::job_info_from_record(fields);
        (void)gputopo::launch::parse_exclusion_record(job.comment);
    });
    gputopo_fuzz::expect_clean([&] { (void)gputopo::launch::parse_slurm_time(text); });
    gputopo_fuzz::expect_clean([&] { (void)gputopo::launch::parse_kill_wait(text); });
    gputopo_fuzz::expect_clean([&] { (void)gputopo::launch::slurm_conf_value(text, "ProctrackType"); });
    gputopo_fuzz::expect_clean([&] {
        (void)gputopo::launch::parse_exclusion_record(text);
        // Not yet checked: that the merged record names the node it added
        // (issue 12 finding 9, fixed with the launcher's record reader).
        (void)gputopo::launch::parse_exclusion_record(gputopo::launch::merge_exclusion_record(text, "n17", 60));
    });
    return 0;
}
