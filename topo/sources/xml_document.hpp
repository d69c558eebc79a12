// A thin RAII wrapper over libxml2 for the topology readers: parses XML text
// safely (no network, no external entities or DTDs, no output on stderr) and
// gives read-only access to elements and attributes.
#pragma once

#include <string>
#include <vector>

// libxml2 types, forward-declared so that users need not include its headers.
struct _xmlDoc;
struct _xmlNode;

namespace gputopo {

class XmlElement {
public:
    explicit XmlElement(const _xmlNode* node) : node_(node) {}
    std::string name() const;
    bool has(const char* attr) const;
    std::string attr(const char* attr) const;  // "" when absent
    std::vector<XmlElement> children() const;  // element children only, in document order
    int line() const;

private:
    const _xmlNode* node_;
};

class XmlDocument {
public:
    // Parses `text`; `name` is used in messages. On malformed XML returns a
    // document with ok() == false and error() describing the first error
    // (with its line number).
    XmlDocument(const std::string& text, const std::string& name);
    ~XmlDocument();
    XmlDocument(const XmlDocument&) = delete;
    XmlDocument& operator=(const XmlDocument&) = delete;

    bool ok() const { return doc_ != nullptr; }
    const std::string& error() const { return error_; }
    XmlElement root() const;  // only when ok()
    // The system id of the <!DOCTYPE ...> ("hwloc2.dtd"), "" when none.
    std::string doctype_system_id() const;

private:
    _xmlDoc* doc_ = nullptr;
    std::string error_;
};

}  // namespace gputopo
