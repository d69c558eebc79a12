#include "topo/sources/xml_document.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <climits>
#include <mutex>

namespace gputopo {

namespace {

// libxml2 prints parse errors on stderr through its generic error handler
// unless told otherwise; the readers report errors themselves.
void silent_error(void*, const char*, ...) {}

void init_libxml_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        xmlInitParser();
        xmlSetGenericErrorFunc(nullptr, silent_error);
    });
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

std::string XmlElement::name() const {
    return node_ && node_->name ? reinterpret_cast<const char*>(node_->name) : "";
}

bool XmlElement::has(const char* attr) const {
    return node_ && xmlHasProp(node_, reinterpret_cast<const xmlChar*>(attr)) != nullptr;
}

std::string XmlElement::attr(const char* attr) const {
    if (!node_) return "";
    xmlChar* v = xmlGetProp(node_, reinterpret_cast<const xmlChar*>(attr));
    if (!v) return "";
    std::string s(reinterpret_cast<const char*>(v));
    xmlFree(v);
    return s;
}

std::vector<XmlElement> XmlElement::children() const {
    std::vector<XmlElement> out;
    if (!node_) return out;
    for (const xmlNode* c = node_->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE) out.emplace_back(c);
    return out;
}

int XmlElement::line() const { return node_ ? static_cast<int>(xmlGetLineNo(node_)) : 0; }

XmlDocument::XmlDocument(const std::string& text, const std::string& name) {
    init_libxml_once();
    if (text.size() > static_cast<size_t>(INT_MAX)) {
        error_ = "too large";
        return;
    }
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        error_ = "out of memory";
        return;
    }
    // No XML_PARSE_NOENT (entities are not substituted), no XML_PARSE_DTDLOAD
    // (the DTD named by <!DOCTYPE> is never fetched), no network.
    const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOBLANKS;
    doc_ = xmlCtxtReadMemory(ctxt, text.data(), static_cast<int>(text.size()), name.c_str(), nullptr, options);
    if (!doc_ || !xmlDocGetRootElement(doc_)) {
        const xmlError* e = xmlCtxtGetLastError(ctxt);
        if (e && e->message)
            error_ = "line " + std::to_string(e->line) + ": " + trim(e->message);
        else
            error_ = "no root element";
        if (doc_) xmlFreeDoc(doc_);
        doc_ = nullptr;
    }
    xmlFreeParserCtxt(ctxt);
}

XmlDocument::~XmlDocument() {
    if (doc_) xmlFreeDoc(doc_);
}

XmlElement XmlDocument::root() const { return XmlElement(doc_ ? xmlDocGetRootElement(doc_) : nullptr); }

std::string XmlDocument::doctype_system_id() const {
    if (!doc_) return "";
    xmlDtdPtr dtd = xmlGetIntSubset(doc_);
    if (!dtd || !dtd->SystemID) return "";
    return reinterpret_cast<const char*>(dtd->SystemID);
}

}  // namespace gputopo
