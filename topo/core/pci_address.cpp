#include "topo/core/pci_address.hpp"

#include <cctype>
#include <cstdio>

#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

bool parse_hex_field(const std::string& s, size_t max_digits, uint32_t max_value, uint32_t& out) {
    if (s.empty() || s.size() > max_digits) return false;
    uint32_t v = 0;
    for (char c : s) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
        int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
        v = v * 16 + static_cast<uint32_t>(d);
    }
    if (v > max_value) return false;
    out = v;
    return true;
}

}  // namespace

bool PciAddress::try_parse(const std::string& text, PciAddress& out) {
    // Split off ".f"
    size_t dot = text.rfind('.');
    if (dot == std::string::npos) return false;
    std::string head = text.substr(0, dot), fn = text.substr(dot + 1);
    size_t c2 = head.rfind(':');
    if (c2 == std::string::npos) return false;
    std::string dev = head.substr(c2 + 1);
    std::string rest = head.substr(0, c2);
    size_t c1 = rest.rfind(':');
    const bool has_domain = c1 != std::string::npos;
    const std::string bus = has_domain ? rest.substr(c1 + 1) : rest;
    PciAddress a;
    if (has_domain && !parse_hex_field(rest.substr(0, c1), 8, 0xffffffffu, a.domain)) return false;
    if (!parse_hex_field(bus, 2, 0xff, a.bus)) return false;
    if (!parse_hex_field(dev, 2, 0x1f, a.device)) return false;
    if (!parse_hex_field(fn, 1, 7, a.function)) return false;
    out = a;
    return true;
}

PciAddress PciAddress::parse(const std::string& text) {
    PciAddress a;
    if (!try_parse(text, a))
        throw ParseError("bad PCI bus id '" + text + "' (expected dddd:bb:dd.f, e.g. 0000:5d:00.0)");
    return a;
}

std::string PciAddress::to_string() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, device, function);
    return buf;
}

}  // namespace gputopo
