#include "topo/sources/nic_state.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <system_error>

#include "topo/core/files.hpp"

namespace gputopo {

namespace fs = std::filesystem;

namespace {

// First line of a sysfs attribute, trimmed; "" when unreadable.
std::string read_attr(const fs::path& p) {
    std::string line = read_first_line(p.string());
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
        line.pop_back();
    size_t b = 0;
    while (b < line.size() && (line[b] == ' ' || line[b] == '\t')) ++b;
    return line.substr(b);
}

// "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp".
std::string after_colon(const std::string& s) {
    auto c = s.find(':');
    if (c == std::string::npos) return s;
    size_t b = c + 1;
    while (b < s.size() && s[b] == ' ') ++b;
    return s.substr(b);
}

double parse_rate(const std::string& s) {
    // "400 Gb/sec (4X NDR)", "25 Gb/sec (1X EDR)", "2.5 Gb/sec (1X SDR)"
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || v < 0) return 0;
    return v;
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) out.push_back(it->path());
    std::sort(out.begin(), out.end());
    return out;
}

bool is_number(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

PortState read_port(const fs::path& dir, int number) {
    PortState p;
    p.number = number;
    p.state = after_colon(read_attr(dir / "state"));
    p.phys_state = after_colon(read_attr(dir / "phys_state"));
    p.link_layer = read_attr(dir / "link_layer");
    p.rate_gbps = parse_rate(read_attr(dir / "rate"));
    if (p.link_layer == "Ethernet") {
        std::vector<GidEntry> gids;
        for (const auto& e : sorted_entries(dir / "gids")) {
            std::string name = e.filename().string();
            if (!is_number(name)) continue;
            GidEntry g;
            g.index = std::atoi(name.c_str());
            g.gid = read_attr(e);
            g.type = read_attr(dir / "gid_attrs" / "types" / name);
            if (!g.gid.empty()) p.gid_table_read = true;
            gids.push_back(g);
        }
        std::sort(gids.begin(), gids.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
        p.roce_v2_gid_index = choose_roce_v2_gid(gids);
        for (const auto& g : gids)
            if (g.index == p.roce_v2_gid_index) p.roce_v2_gid = g.gid;
    }
    return p;
}

bool all_zero_gid(const std::string& gid) {
    for (char c : gid)
        if (c != '0' && c != ':') return false;
    return true;
}

std::string lower(std::string s) {
    for (auto& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

bool is_roce_v2(const std::string& type) {
    std::string t = lower(type);
    return t.find("roce v2") != std::string::npos || t.find("rocev2") != std::string::npos;
}

}  // namespace

int choose_roce_v2_gid(const std::vector<GidEntry>& gids) {
    int ipv4 = -1, global = -1, link_local = -1;  // link-local: never chosen
    for (const auto& g : gids) {
        if (g.index < 0 || g.gid.empty() || all_zero_gid(g.gid) || !is_roce_v2(g.type)) continue;
        std::string gid = lower(g.gid);
        if (gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0) {
            if (ipv4 < 0) ipv4 = g.index;
        } else if (gid.rfind("fe80:", 0) == 0) {
            if (link_local < 0) link_local = g.index;
        } else if (global < 0) {
            global = g.index;
        }
    }
    (void)link_local;
    if (ipv4 >= 0) return ipv4;
    return global;
}

std::vector<NicState> read_nic_state(const std::string& root) {
    std::vector<NicState> out;
    try {
        fs::path base = fs::path(root.empty() ? "/" : root) / "sys/class/infiniband";
        for (const auto& dev : sorted_entries(base)) {
            NicState n;
            n.name = dev.filename().string();
            std::error_code ec;
            fs::path pci_dir = fs::canonical(dev / "device", ec);
            if (!ec) n.pci_known = PciAddress::try_parse(pci_dir.filename().string(), n.pci);
            for (const auto& nd : sorted_entries(dev / "device" / "net")) n.netdevs.push_back(nd.filename().string());
            for (const auto& port : sorted_entries(dev / "ports")) {
                std::string num = port.filename().string();
                if (!is_number(num)) continue;
                n.ports.push_back(read_port(port, std::atoi(num.c_str())));
            }
            std::sort(n.ports.begin(), n.ports.end(),
                      [](const PortState& a, const PortState& b) { return a.number < b.number; });
            out.push_back(std::move(n));
        }
    } catch (...) {
        // sysfs that cannot be read is "state unknown", never an error.
    }
    return out;
}

}  // namespace gputopo
