#include "launcher/failure/classify.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "launcher/options/options.hpp"

namespace gputopo::launch {

const char* failure_class_name(FailureClass c) {
    switch (c) {
        case FailureClass::Success: return "success";
        case FailureClass::UserError: return "user_error";
        case FailureClass::GpuFault: return "gpu_fault";
        case FailureClass::NodeFault: return "node_fault";
        case FailureClass::Timeout: return "timeout";
        case FailureClass::Preemption: return "preemption";
        case FailureClass::Failed: return "failed";
        case FailureClass::PeerLost: return "peer_lost";
    }
    return "failed";
}

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find_first_of("\r\n", pos);
        if (nl == std::string::npos) nl = text.size();
        if (nl > pos) out.push_back(text.substr(pos, nl - pos));
        pos = nl + 1;
    }
    return out;
}

bool contains_any(const std::string& l, std::initializer_list<const char*> needles) {
    for (const char* n : needles)
        if (l.find(n) != std::string::npos) return true;
    return false;
}

// An "Xid" token: "NVRM: Xid (PCI:0000:3b:00): 79, ..." or "Xid 48".
bool has_xid(const std::string& original) {
    size_t pos = 0;
    while ((pos = original.find("Xid", pos)) != std::string::npos) {
        bool left_ok = pos == 0 || !std::isalnum(static_cast<unsigned char>(original[pos - 1]));
        size_t after = pos + 3;
        bool right_ok = after >= original.size() || original[after] == ' ' || original[after] == ':' ||
                        original[after] == '(';
        if (left_ok && right_ok) return true;
        pos = after;
    }
    return false;
}

// CUDA errors a program causes itself: not a GPU fault.
bool program_caused_cuda_error(const std::string& l) {
    return contains_any(l, {"out of memory", "device-side assert", "invalid argument", "invalid configuration",
                            "invalid device function", "no kernel image", "invalid device ordinal",
                            "cuda_error_out_of_memory", "cudaerrormemoryallocation", "misaligned address"});
}

std::string clip(const std::string& s) {
    std::string t = s;
    size_t a = t.find_first_not_of(" \t");
    if (a != std::string::npos) t = t.substr(a);
    if (t.size() > 300) t = t.substr(0, 300) + "...";
    return t;
}

}  // namespace

bool find_gpu_evidence(const std::string& tail, std::string& line, bool& local) {
    std::vector<std::string> ls = lines_of(tail);
    for (auto it = ls.rbegin(); it != ls.rend(); ++it) {
        std::string l = lower(*it);
        bool hw = has_xid(*it) ||
                  contains_any(l, {"uncorrectable ecc", "ecc error", "fallen off the bus", "gpu is lost",
                                   "nvml_error_gpu_is_lost", "cuda_error_ecc_uncorrectable", "gpu has fallen",
                                   "unrecoverable error", "cuda_error_launch_failed", "unspecified launch failure",
                                   "cuda driver error", "cuda_error_system_not_ready", "cuda_error_no_device",
                                   "no cuda-capable device", "hiperrornodevice"});
        bool cuda = !hw && contains_any(l, {"cuda error", "cudaerror", "cuda_error_", "cublas_status_execution_failed",
                                            "cudnn_status_execution_failed", "hip error", "hiperror"}) &&
                    !program_caused_cuda_error(l);
        if (hw || cuda) {
            line = clip(*it);
            local = true;
            return true;
        }
    }
    return false;
}

bool find_nccl_error(const std::string& text, std::string& line, bool& local) {
    std::vector<std::string> ls = lines_of(text);
    for (auto it = ls.rbegin(); it != ls.rend(); ++it) {
        std::string l = lower(*it);
        if (contains_any(l, {"nccl error", "ncclinternalerror", "ncclunhandledcudaerror", "distbackenderror"})) {
            line = clip(*it);
            local = l.find("cuda") != std::string::npos && !program_caused_cuda_error(l);
            return true;
        }
    }
    return false;
}

bool find_node_evidence(const std::string& tail, std::string& line) {
    std::vector<std::string> ls = lines_of(tail);
    for (auto it = ls.rbegin(); it != ls.rend(); ++it) {
        std::string l = lower(*it);
        if (contains_any(l, {"node failure", "net/ib : got completion", "net/ib: got completion", "ibv_poll_cq",
                             "transport retry counter exceeded", "no route to host"})) {
            line = clip(*it);
            return true;
        }
    }
    return false;
}

bool find_peer_evidence(const std::string& tail, std::string& line) {
    std::vector<std::string> ls = lines_of(tail);
    for (auto it = ls.rbegin(); it != ls.rend(); ++it) {
        std::string l = lower(*it);
        if (contains_any(l, {"ncclremoteerror", "remote process exited", "connection reset by peer",
                             "connection closed by remote peer", "connection closed by peer", "lost connection to",
                             "watchdog caught collective operation timeout", "nccl watchdog", "ncclsystemerror",
                             "nccl timeout", "collective operation timeout", "rccl watchdog",
                             "nccl communicator was aborted", "broken pipe", "gloo/transport"}) ||
            (l.find("nccl") != std::string::npos && l.find("timeout") != std::string::npos) ||
            (l.find("gloo") != std::string::npos && l.find("timed out") != std::string::npos)) {
            line = clip(*it);
            return true;
        }
    }
    return false;
}

std::string without_rank_prefix(const std::string& line) {
    if (line.rfind("[rank", 0) != 0) return line;
    size_t i = 5;
    while (i < line.size() && i < 15 && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i == 5 || line.compare(i, 2, "]:") != 0) return line;
    i += 2;
    if (i < line.size() && line[i] == ' ') ++i;
    return line.substr(i);
}

bool is_exception_line(const std::string& l) {
    size_t n = 0;
    while (n < l.size() && (std::isalnum(static_cast<unsigned char>(l[n])) || l[n] == '_' || l[n] == '.')) ++n;
    if (n == 0 || std::isdigit(static_cast<unsigned char>(l[0]))) return false;
    return n == l.size() || l.compare(n, 2, ": ") == 0;
}

std::string find_exception_line(const std::string& text) {
    std::vector<std::string> ls = lines_of(text);
    for (auto& l : ls) l = without_rank_prefix(l);
    size_t tb = ls.size();
    for (size_t i = ls.size(); i-- > 0;)
        if (ls[i].rfind("Traceback (most recent call last):", 0) == 0) {
            tb = i;
            break;
        }
    // The first such line after the frames (later lines are the program's teardown).
    for (size_t i = tb + 1; i < ls.size(); ++i)
        if (is_exception_line(ls[i])) return clip(ls[i]);
    return "";
}

int exit_status_of(const ChildEnd& end) {
    if (end.exited) return end.exit_code;
    return 128 + end.term_signal;
}

Classification classify(const ChildEnd& end, const ClassifyPolicy& policy) {
    Classification c;
    if (end.preflight_failed) {
        c.cls = FailureClass::GpuFault;
        c.local = true;
        c.evidence = "preflight failed: " + clip(end.preflight_output.empty() ? "(no output)" : end.preflight_output);
        return c;
    }
    bool failed_end = !end.exited || end.exit_code != 0;
    if (end.exited && end.exit_code != 0) {
        bool listed = std::find(policy.no_requeue_exit.begin(), policy.no_requeue_exit.end(), end.exit_code) !=
                      policy.no_requeue_exit.end();
        if (listed || end.exit_code == policy.no_requeue_code) {
            c.cls = FailureClass::UserError;
            c.evidence = "exit code " + std::to_string(end.exit_code) +
                         (listed ? " is listed in --no-requeue-exit" : " is the reserved do-not-requeue code");
            return c;
        }
    }
    if (end.got_term) {
        bool at_end = !std::isnan(end.term_time_left_s) && end.term_time_left_s <= policy.timeout_window_s;
        c.cls = at_end ? FailureClass::Timeout : FailureClass::Preemption;
        c.evidence = at_end ? "SIGTERM at the job's time limit" : "SIGTERM before the job's time limit (preemption or cancel)";
        return c;
    }
    if (!failed_end) {
        c.cls = FailureClass::Success;
        c.evidence = "exit code 0";
        return c;
    }
    std::string how = end.exited ? "exit code " + std::to_string(end.exit_code)
                                 : "killed by " + signal_name(end.term_signal);
    std::string line;
    bool local = false;
    if (!end.error_record.empty()) {
        // A peer's loss first: "NCCL error ... remote process exited" is not this rank's own.
        bool gpu = find_gpu_evidence(end.error_record, line, local);
        if (!gpu && find_peer_evidence(end.error_record, line)) {
            c.cls = FailureClass::PeerLost;
            c.evidence = how + "; error file: " + line;
            return c;
        }
        if (!gpu && find_node_evidence(end.error_record, line)) {
            c.cls = FailureClass::NodeFault;
            c.evidence = how + "; error file: " + line;
            return c;
        }
        if (gpu || find_nccl_error(end.error_record, line, local)) {
            c.cls = FailureClass::GpuFault;
            c.local = local;
            c.evidence = how + "; error file: " + line;
            return c;
        }
    }
    if (find_gpu_evidence(end.stderr_tail, line, local)) {
        c.cls = FailureClass::GpuFault;
        c.local = local;
        c.evidence = how + "; stderr: " + line;
        return c;
    }
    if (find_peer_evidence(end.stderr_tail, line)) {
        c.cls = FailureClass::PeerLost;
        c.evidence = how + "; stderr: " + line;
        return c;
    }
    if (find_node_evidence(end.stderr_tail, line)) {
        c.cls = FailureClass::NodeFault;
        c.evidence = how + "; stderr: " + line;
        return c;
    }
    c.cls = FailureClass::Failed;
    c.evidence = how;
    return c;
}

}  // namespace gputopo::launch
