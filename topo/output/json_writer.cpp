#include "topo/output/json_writer.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace gputopo {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t utf8_sequence_length(const std::string& s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = byte(i);
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;        // no overlong forms
        if (c == 0xED) hi = 0x9F;        // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;        // nothing above U+10FFFF
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
    return n;
}

}  // namespace

std::string json_quote(const std::string& text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (size_t i = 0; i < text.size();) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        switch (c) {
            case '"': out += "\\\""; ++i; continue;
            case '\\': out += "\\\\"; ++i; continue;
            case '\b': out += "\\b"; ++i; continue;
            case '\f': out += "\\f"; ++i; continue;
            case '\n': out += "\\n"; ++i; continue;
            case '\r': out += "\\r"; ++i; continue;
            case '\t': out += "\\t"; ++i; continue;
            default: break;
        }
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
            ++i;
            continue;
        }
        size_t n = utf8_sequence_length(text, i);
        if (n == 0) {
            out += "\\ufffd";
            ++i;
            continue;
        }
        out.append(text, i, n);
        i += n;
    }
    out += '"';
    return out;
}

JsonWriter::JsonWriter(int indent) : indent_(indent < 0 ? 0 : indent) {}

bool JsonWriter::inline_here() const { return indent_ == 0 || (!stack_.empty() && stack_.back().inline_layout); }

void JsonWriter::newline(size_t depth) {
    out_ += '\n';
    out_.append(depth * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
    if (done_) throw std::logic_error("JsonWriter: a second top-level value");
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (f.object) {
        if (!f.key_pending) throw std::logic_error("JsonWriter: a value in an object without a key");
        f.key_pending = false;
        return;
    }
    if (f.count > 0) out_ += ',';
    if (!inline_here()) newline(stack_.size());
    else if (f.count > 0) out_ += ' ';
    ++f.count;
}

void JsonWriter::raw_value(const std::string& text) {
    before_value();
    out_ += text;
    if (stack_.empty()) done_ = true;
}

JsonWriter& JsonWriter::key(const std::string& name) {
    if (stack_.empty() || !stack_.back().object) throw std::logic_error("JsonWriter: a key outside an object");
    Frame& f = stack_.back();
    if (f.key_pending) throw std::logic_error("JsonWriter: two keys in a row");
    if (f.count > 0) out_ += ',';
    if (!inline_here()) newline(stack_.size());
    else if (f.count > 0) out_ += ' ';
    out_ += json_quote(name);
    out_ += ": ";
    f.key_pending = true;
    ++f.count;
    return *this;
}

JsonWriter& JsonWriter::begin_object(Layout layout) {
    before_value();
    bool inl = layout == Inline || inline_here();
    out_ += '{';
    stack_.push_back(Frame{true, inl, 0, false});
    return *this;
}

JsonWriter& JsonWriter::begin_array(Layout layout) {
    before_value();
    bool inl = layout == Inline || inline_here();
    out_ += '[';
    stack_.push_back(Frame{false, inl, 0, false});
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    if (stack_.empty() || !stack_.back().object) throw std::logic_error("JsonWriter: end_object without an open object");
    if (stack_.back().key_pending) throw std::logic_error("JsonWriter: end_object after a key with no value");
    Frame f = stack_.back();
    stack_.pop_back();
    if (f.count > 0 && !f.inline_layout) newline(stack_.size());
    out_ += '}';
    if (stack_.empty()) done_ = true;
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    if (stack_.empty() || stack_.back().object) throw std::logic_error("JsonWriter: end_array without an open array");
    Frame f = stack_.back();
    stack_.pop_back();
    if (f.count > 0 && !f.inline_layout) newline(stack_.size());
    out_ += ']';
    if (stack_.empty()) done_ = true;
    return *this;
}

JsonWriter& JsonWriter::value(const std::string& v) {
    raw_value(json_quote(v));
    return *this;
}
JsonWriter& JsonWriter::value(const char* v) {
    if (!v) return null();
    return value(std::string(v));
}
JsonWriter& JsonWriter::value(bool v) {
    raw_value(v ? "true" : "false");
    return *this;
}
JsonWriter& JsonWriter::value(int v) { return value(static_cast<long long>(v)); }
JsonWriter& JsonWriter::value(long v) { return value(static_cast<long long>(v)); }
JsonWriter& JsonWriter::value(long long v) {
    raw_value(std::to_string(v));
    return *this;
}
JsonWriter& JsonWriter::value(unsigned v) { return value(static_cast<unsigned long long>(v)); }
JsonWriter& JsonWriter::value(unsigned long v) { return value(static_cast<unsigned long long>(v)); }
JsonWriter& JsonWriter::value(unsigned long long v) {
    raw_value(std::to_string(v));
    return *this;
}
JsonWriter& JsonWriter::value(double v) {
    if (!std::isfinite(v)) return null();
    // The shortest of %.15g / %.17g that reads back as the same double.
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
    raw_value(buf);
    return *this;
}
JsonWriter& JsonWriter::null() {
    raw_value("null");
    return *this;
}

JsonWriter& JsonWriter::value(const std::vector<std::string>& v) {
    begin_array(Inline);
    for (const auto& s : v) value(s);
    return end_array();
}

JsonWriter& JsonWriter::value(const std::vector<int>& v) {
    begin_array(Inline);
    for (int i : v) value(i);
    return end_array();
}

bool JsonWriter::complete() const { return done_; }

std::string JsonWriter::str() const {
    if (!done_) throw std::logic_error("JsonWriter: the document is not complete");
    return out_;
}

}  // namespace gputopo
