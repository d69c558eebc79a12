#include "launcher/failure/root_cause.hpp"

namespace gputopo::launch {

bool is_root_cause(FailureClass c) {
    return c == FailureClass::Failed || c == FailureClass::UserError || c == FailureClass::GpuFault ||
           c == FailureClass::NodeFault;
}

FailureClass failure_class_from_name(const std::string& name) {
    for (FailureClass c : {FailureClass::Success, FailureClass::UserError, FailureClass::GpuFault,
                           FailureClass::NodeFault, FailureClass::Timeout, FailureClass::Preemption,
                           FailureClass::Failed, FailureClass::PeerLost})
        if (name == failure_class_name(c)) return c;
    return FailureClass::Failed;
}

std::string cause_key(const std::string& step_id, int restart_count) {
    return (step_id.empty() ? "batch" : step_id) + "." + std::to_string(restart_count);
}

bool job_asked_requeue(const std::string& comment, bool requeue_allowed, const std::string& job_requeue_conf) {
    if (!requeue_allowed) return false;
    if (comment_asks_requeue(comment)) return true;
    return job_requeue_conf == "0";
}

}  // namespace gputopo::launch
