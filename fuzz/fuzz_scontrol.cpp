// What the launcher reads from Slurm (launcher/requeue/slurm_ctl.cpp, requeue.cpp):
// the job's fields from `squeue --Format=...|` output, a time, a
// `scontrol show config` KillWait, and the Comment's exclusion record merged
// with a node (the merged record must name the node it added: finding 9).
#include "fuzz/fuzz_common.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/requeue/slurm_ctl.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text = gputopo_fuzz::text_of(data, size);
    gputopo_fuzz::expect_clean([&] {
        gputopo::launch::JobInfo job = gputopo::launch::parse_squeue_job(text);
        // One job's line only: no second line may reach the Comment written back (issue 20, H9).
        if (job.known && job.comment.find('\n') != std::string::npos) __builtin_trap();
        (void)gputopo::launch::parse_exclusion_record(job.comment);
    });
    gputopo_fuzz::expect_clean([&] { (void)gputopo::launch::parse_slurm_time(text); });
    gputopo_fuzz::expect_clean([&] { (void)gputopo::launch::parse_kill_wait(text); });
    gputopo_fuzz::expect_clean([&] { (void)gputopo::launch::slurm_conf_value(text, "ProctrackType"); });
    gputopo_fuzz::expect_clean([&] {
        (void)gputopo::launch::parse_exclusion_record(text);
        auto merged = gputopo::launch::parse_exclusion_record(gputopo::launch::merge_exclusion_record(text, "n17", 60));
        bool named = false;
        for (const auto& n : merged.nodes) named = named || n == "n17";
        if (!named) __builtin_trap();
    });
    return 0;
}
