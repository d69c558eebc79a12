#include "launcher/failure/error_file.hpp"

#include "launcher/options/options.hpp"
#include "launcher/state/node_state.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/files.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace gputopo::launch {

namespace {

constexpr size_t kMaxBytes = 1 << 20;
constexpr int kMaxDepth = 32;

// Just enough JSON for the error file: objects, arrays, strings, numbers,
// true/false/null. Strings keep \uXXXX below 0x80 and turn others into '?'.
struct Value {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    std::string text;  // String (decoded) or Number (as written)
    std::map<std::string, std::shared_ptr<Value>> fields;
};

class Parser {
public:
    explicit Parser(const std::string& t) : t_(t) {}
    bool parse(Value& v) { return value(v, 0) && (skip(), p_ == t_.size()); }

private:
    void skip() {
        while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
    }
    bool literal(const char* word) {
        std::string w(word);
        if (t_.compare(p_, w.size(), w) != 0) return false;
        p_ += w.size();
        return true;
    }
    bool string(std::string& out) {
        if (p_ >= t_.size() || t_[p_] != '"') return false;
        ++p_;
        while (p_ < t_.size() && t_[p_] != '"') {
            char c = t_[p_++];
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p_ >= t_.size()) return false;
            char e = t_[p_++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'u': {
                    if (p_ + 4 > t_.size()) return false;
                    unsigned code = 0;
                    for (int i = 0; i < 4; ++i) {
                        char h = t_[p_++];
                        code <<= 4;
                        if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
                        else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
                        else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
                        else return false;
                    }
                    out += code < 0x80 ? static_cast<char>(code) : '?';
                    break;
                }
                default: out += e;
            }
        }
        if (p_ >= t_.size()) return false;
        ++p_;
        return true;
    }
    bool value(Value& v, int depth) {
        if (depth > kMaxDepth) return false;
        skip();
        if (p_ >= t_.size()) return false;
        char c = t_[p_];
        if (c == '"') {
            v.kind = Value::String;
            return string(v.text);
        }
        if (c == '{' || c == '[') {
            bool obj = c == '{';
            v.kind = obj ? Value::Object : Value::Array;
            ++p_;
            skip();
            if (p_ < t_.size() && t_[p_] == (obj ? '}' : ']')) return ++p_, true;
            for (size_t i = 0;; ++i) {
                skip();
                std::string key = std::to_string(i);
                if (obj) {
                    key.clear();
                    if (!string(key)) return false;
                    skip();
                    if (p_ >= t_.size() || t_[p_++] != ':') return false;
                }
                auto child = std::make_shared<Value>();
                if (!value(*child, depth + 1)) return false;
                v.fields[key] = child;
                skip();
                if (p_ >= t_.size()) return false;
                if (t_[p_] == ',') { ++p_; continue; }
                if (t_[p_] == (obj ? '}' : ']')) return ++p_, true;
                return false;
            }
        }
        if (literal("true") || literal("false")) return v.kind = Value::Bool, true;
        if (literal("null")) return true;
        size_t start = p_;
        while (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '-' || t_[p_] == '+' ||
                                  t_[p_] == '.' || t_[p_] == 'e' || t_[p_] == 'E'))
            ++p_;
        if (p_ == start) return false;
        v.kind = Value::Number;
        v.text = t_.substr(start, p_ - start);
        return true;
    }

    const std::string& t_;
    size_t p_ = 0;
};

const Value* field(const Value& v, const char* key) {
    if (v.kind != Value::Object) return nullptr;
    auto it = v.fields.find(key);
    return it == v.fields.end() ? nullptr : it->second.get();
}

}  // namespace

std::string resolve_error_file(const Options& opt, const std::string& job, int rank, int restart) {
    std::string pattern = opt.error_file;
    if (pattern == "auto") {
        const char* tmp = std::getenv(env::kTmpdir);
        std::string dir = !opt.log_dir.empty() ? opt.log_dir : node_private_dir("", "", tmp ? tmp : "");
        if (dir.empty()) return "";
        pattern = dir + "/gputopo-error.%j.%r.json";
    }
    return error_file_path(pattern, job, rank, restart);
}

std::string error_file_path(const std::string& pattern, const std::string& job, int rank, int restart) {
    if (pattern.empty() || pattern == "none") return "";
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size()) {
            char k = pattern[i + 1];
            if (k == 'j') { out += job.empty() ? "nojob" : job; ++i; continue; }
            if (k == 'r') { out += std::to_string(rank); ++i; continue; }
            if (k == 'R') { out += std::to_string(restart); ++i; continue; }
        }
        out += pattern[i];
    }
    return out;
}

ErrorRecord parse_error_record(const std::string& text) {
    ErrorRecord r;
    Value root;
    if (text.size() > kMaxBytes || !Parser(text).parse(root)) {
        r.problem = "not JSON (expected torch's error file: {\"message\": {\"message\": ..., \"extraInfo\": ...}})";
        return r;
    }
    const Value* m = field(root, "message");
    if (!m) {
        r.problem = "no \"message\" field (expected torch's error file format)";
        return r;
    }
    r.found = true;
    if (m->kind == Value::String) {
        r.message = m->text;
        return r;
    }
    if (const Value* inner = field(*m, "message"); inner && inner->kind == Value::String) r.message = inner->text;
    if (const Value* code = field(*m, "errorCode"); code && code->kind == Value::Number)
        r.error_code = std::atoll(code->text.c_str());
    if (const Value* extra = field(*m, "extraInfo")) {
        if (const Value* cs = field(*extra, "py_callstack"); cs && cs->kind == Value::String) r.callstack = cs->text;
        if (const Value* ts = field(*extra, "timestamp"); ts && (ts->kind == Value::String || ts->kind == Value::Number))
            r.timestamp = ts->text;
    }
    return r;
}

ErrorRecord read_error_record(const std::string& path) {
    ReadFailure why;
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{kMaxBytes, false, true}, &why);
    if (!text) {
        if (why.err == ENOENT) return {};
        ErrorRecord r;
        r.problem = path + " " + why.what + " (expected the program's own error file, a regular file of at most " +
                    std::to_string(kMaxBytes) + " bytes); not used";
        return r;
    }
    ErrorRecord r = parse_error_record(*text);
    if (!r.problem.empty()) r.problem = path + ": " + r.problem;
    return r;
}

}  // namespace gputopo::launch
