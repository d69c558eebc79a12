// A small streaming JSON writer with correct string escaping. Used by the CLI
// (`gputopo show/plan --format json`), the plugin's verbose output and the
// launcher's event log, so that every JSON gputopo prints is valid.
//
//   JsonWriter w(2);                       // indent 2; 0 = one line
//   w.begin_object();
//   w.key("mode").value("island");
//   w.key("gpus").begin_array(JsonWriter::Inline).value(0).value(1).end_array();
//   w.end_object();
//   std::string text = w.str();
//
// One-line output uses Python's json.dumps separators (", " and ": ").
// A container opened with Inline stays on one line inside indented output
// (handy for short records: one task per line). Misuse (a value where a key
// is due, unbalanced ends) throws std::logic_error: it is a programming error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gputopo {

// `text` as a JSON string literal, quotes included. Control characters are
// escaped; bytes that are not valid UTF-8 become U+FFFD, so the result is
// always valid JSON whatever the input (device names come from files).
std::string json_quote(const std::string& text);

// The "schema_version" every JSON document gputopo prints for scripts starts
// with (gputopo show/plan/ranks/doctor --format json). Raised when a field
// changes meaning or goes away; new fields do not raise it.
constexpr int kJsonSchemaVersion = 1;

class JsonWriter {
public:
    enum Layout { Block, Inline };

    explicit JsonWriter(int indent = 0);

    JsonWriter& begin_object(Layout layout = Block);
    JsonWriter& end_object();
    JsonWriter& begin_array(Layout layout = Block);
    JsonWriter& end_array();
    JsonWriter& key(const std::string& name);

    JsonWriter& value(const std::string& v);
    JsonWriter& value(const char* v);
    JsonWriter& value(bool v);
    JsonWriter& value(int v);
    JsonWriter& value(long v);
    JsonWriter& value(long long v);
    JsonWriter& value(unsigned v);
    JsonWriter& value(unsigned long v);
    JsonWriter& value(unsigned long long v);
    JsonWriter& value(double v);   // NaN and infinities are written as null
    JsonWriter& null();

    // Convenience: an inline array of strings / integers.
    JsonWriter& value(const std::vector<std::string>& v);
    JsonWriter& value(const std::vector<int>& v);

    // True once the top-level value is complete.
    bool complete() const;
    // The text so far; throws std::logic_error if the document is not complete.
    std::string str() const;

private:
    struct Frame {
        bool object;
        bool inline_layout;
        int count;
        bool key_pending;
    };
    void before_value();
    void raw_value(const std::string& text);
    void newline(size_t depth);
    bool inline_here() const;

    int indent_;
    std::string out_;
    std::vector<Frame> stack_;
    bool done_ = false;
};

}  // namespace gputopo
