#include "topo/core/strings.hpp"
#include "topo/output/svg_writer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <map>

#include "topo/output/picture_model.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/output/text_table.hpp"
#include "topo/output/xml_escape.hpp"

namespace gputopo {

namespace {

// Geometry, in SVG user units (pixels at 100%).
constexpr int kMargin = 20;
constexpr int kGpuW = 112, kNicW = 100, kLeafH = 76, kLeafGap = 10;
constexpr int kSwitchW = 118, kSwitchH = 32, kLevelH = 62;
constexpr int kBandW = 960;  // a package wider than this is drawn over several bands
constexpr int kCell = 9, kCellGap = 2, kPad = 10, kMinNumaW = 220;
constexpr int kNumaHeader = 40, kPkgHeader = 24, kGap = 16;
constexpr int kCharW = 7;      // average width of an 11px sans-serif character
constexpr int kMonoCharW = 7;  // width of an 11px monospace character
constexpr int kBarH = 20, kBarRow = 30;
constexpr int kRowGap = 8;  // between a NIC and the one hanging under it

const char* const kStyle =
    "text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:11px;fill:#263238}"
    ".t{font-size:17px;font-weight:bold}.st{font-size:12px;fill:#546e7a}.b{font-weight:bold}"
    ".m{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:10px}"
    ".tm{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:11px}"
    ".s{font-size:10px;fill:#546e7a}"
    ".pkg{fill:#fafafa;stroke:#90a4ae;stroke-width:1.5}.numa{fill:#eceff1;stroke:#b0bec5}"
    ".core{fill:#cfd8dc}.gpu{fill:#f1f8e9;stroke:#558b2f;stroke-width:1.5}"
    ".nic{fill:#e3f2fd;stroke:#1565c0;stroke-width:1.5}"
    ".off{fill:#f5f5f5;stroke:#9e9e9e;stroke-width:1.5;stroke-dasharray:5 3}"
    ".sw{fill:#ffffff;stroke:#78909c;stroke-width:1.2}.e{fill:none;stroke:#90a4ae;stroke-width:1.5}"
    ".ok{fill:#2e7d32;font-weight:bold}.bad{fill:#c62828;font-weight:bold}.w{fill:#e65100}"
    ".chip{font-size:9px;font-weight:bold;fill:#ffffff}.bar{font-size:10px;font-weight:bold;fill:#ffffff}";

std::string attr(const std::string& s) { return xml_escape(s); }

// Estimated width of `s` at font size `px` in a sans-serif font (capitals and
// digits wider than lower case, punctuation narrow); renderers differ a little.
double text_width(const std::string& s, double px) {
    double w = 0;
    for (unsigned char c : s) w += std::isupper(c) ? 0.70 : std::isalnum(c) ? 0.58 : 0.36;
    return w * px;
}

// `s` shortened (ending in "~") until it fits `width` at `px`.
std::string fit_text(std::string s, double px, int width) {
    if (text_width(s, px) <= width) return s;
    while (s.size() > 1 && text_width(s + "~", px) > width) s.pop_back();
    return s + "~";
}

// The font size (at most 11) at which `s` fits `width` in bold: long NIC
// names are shown whole, smaller.
std::string font_to_fit(const std::string& s, int width) {
    const double w = text_width(s, 11) * 1.08;
    if (w <= width) return "";
    const int px = std::max(7, static_cast<int>(11.0 * width / w));
    return "font-size:" + std::to_string(px) + "px";
}

// `text` in lines of at most `width` characters, broken at spaces (a longer word stays
// whole), continuation lines indented.
std::vector<std::string> wrap_words(const std::string& text, size_t width) {
    std::vector<std::string> lines{""};
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(start, end - start);
        if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.push_back("    ");
        if (!lines.back().empty() && lines.back() != "    ") lines.back() += ' ';
        lines.back() += word;
        start = end + 1;
    }
    return lines;
}

// `color` ("#rrggbb") mixed with white: 0 the colour, 1 white.
std::string tint(const std::string& color, double white) {
    unsigned r = 0, g = 0, b = 0;
    if (std::sscanf(color.c_str(), "#%2x%2x%2x", &r, &g, &b) != 3) return color;
    auto mix = [white](unsigned c) { return static_cast<unsigned>(c + (255 - c) * white + 0.5); };
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(r) & 0xff, mix(g) & 0xff, mix(b) & 0xff);
    return buf;
}

class Canvas {
public:
    void rect(int x, int y, int w, int h, const std::string& cls, int rx = 0, const std::string& style = "") {
        out_ += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(w) +
                "\" height=\"" + std::to_string(h) + "\"";
        if (rx > 0) out_ += " rx=\"" + std::to_string(rx) + "\"";
        if (!cls.empty()) out_ += " class=\"" + cls + "\"";
        if (!style.empty()) out_ += " style=\"" + style + "\"";
        out_ += "/>\n";
    }
    void text(int x, int y, const std::string& s, const std::string& cls = "", const char* anchor = nullptr,
              const std::string& style = "") {
        out_ += "<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\"";
        if (!cls.empty()) out_ += " class=\"" + cls + "\"";
        if (anchor) out_ += std::string(" text-anchor=\"") + anchor + "\"";
        if (!style.empty()) out_ += " style=\"" + style + "\"";
        out_ += ">" + attr(s) + "</text>\n";
    }
    // An orthogonal connector from (x1,y1) down to (x2,y2).
    void elbow(int x1, int y1, int x2, int y2, const std::string& style = "") {
        const int mid = y1 + (y2 - y1) / 2;
        out_ += "<path d=\"M" + std::to_string(x1) + " " + std::to_string(y1) + " V" + std::to_string(mid) + " H" +
                std::to_string(x2) + " V" + std::to_string(y2) + "\" class=\"e\"";
        if (!style.empty()) out_ += " style=\"" + style + "\"";
        out_ += "/>\n";
    }
    void raw(const std::string& s) { out_ += s; }
    const std::string& str() const { return out_; }

private:
    std::string out_;
};

struct NumaBox {
    int numa = -1;
    std::string title, subtitle;
    std::vector<CpuSet> cells;             // one per core (or PU)
    const NumaDevices* devices = nullptr;  // may be null
    std::vector<std::vector<DeviceTreeNode>> rows;  // its device trees, in rows of at most kBandW
    int x = 0, w = 0;
};

struct PkgBox {
    std::string title;
    std::vector<NumaBox> numas;
    int x = 0, w = 0;
    int group = 0;  // the package it shows: a wide package is drawn over several bands, in one box
};

// "1 GPU", "8 GPUs".
std::string count_of(size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

// "NVIDIA", "AMD", "Intel", "" for a label.
std::string vendor_label(Vendor v) {
    switch (v) {
        case Vendor::Nvidia: return "NVIDIA";
        case Vendor::Amd: return "AMD";
        case Vendor::Intel: return "Intel";
        case Vendor::Other: break;
    }
    return "";
}

// "8 GPUs (H100 80GB HBM3)", the models as the topology names them; "8 GPUs (NVIDIA, no model
// in the topology)" for a file that names none (NCCL's dumps), never a model guessed from a name.
std::string gpus_caption(const Node& node) {
    std::vector<std::string> models;
    bool unnamed = false;
    for (const auto& g : node.gpus) {
        if (g.model.empty()) {
            unnamed = true;
            continue;
        }
        const std::string m = short_gpu_model(g.model);
        if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    }
    std::string s = count_of(node.gpus.size(), "GPU");
    if (node.gpus.empty()) return s;
    if (unnamed) {
        const std::string v = vendor_label(node.gpus.front().vendor);
        models.push_back((v.empty() ? "" : v + ", ") + "no model in the topology");
    }
    return s + " (" + join_strings(models, ", ") + ")";
}

int leaf_width(const DeviceTreeNode& t) { return t.kind == DeviceTreeNode::GpuLeaf ? kGpuW : kNicW; }

// Children side by side in columns; two NICs in a row (the ports of one dual-port card,
// the NICs behind one PCIe switch) share a column, one above the other, so that an
// 8-GPU/16-NIC node reads at 900 px.
std::vector<std::vector<const DeviceTreeNode*>> columns(const std::vector<DeviceTreeNode>& kids) {
    std::vector<std::vector<const DeviceTreeNode*>> cols;
    for (size_t i = 0; i < kids.size(); ++i) {
        const bool pair = kids[i].kind == DeviceTreeNode::NicLeaf && kids[i].children.empty() && i + 1 < kids.size() &&
                          kids[i + 1].kind == DeviceTreeNode::NicLeaf && kids[i + 1].children.empty();
        if (pair) {
            cols.push_back({&kids[i], &kids[i + 1]});
            ++i;
        } else {
            cols.push_back({&kids[i]});
        }
    }
    return cols;
}

int subtree_width(const DeviceTreeNode& t);

int columns_width(const std::vector<DeviceTreeNode>& kids) {
    int w = 0;
    for (const auto& col : columns(kids)) w += subtree_width(*col.front());
    return w;
}

int subtree_width(const DeviceTreeNode& t) {
    if (t.children.empty()) return leaf_width(t) + kLeafGap;
    return columns_width(t.children);
}

// The lowest GPU index under `t`, INT_MAX when none.
int lowest_gpu(const DeviceTreeNode& t) {
    if (t.kind == DeviceTreeNode::GpuLeaf) return t.index;
    int lo = std::numeric_limits<int>::max();
    for (const auto& c : t.children) lo = std::min(lo, lowest_gpu(c));
    return lo;
}

// Trees (and, in each, the children of every switch) with GPUs first, by their lowest GPU
// index, so that GPUs read in index order; the others after them, in PCI order.
void gpus_first(std::vector<DeviceTreeNode>& trees) {
    for (auto& t : trees) gpus_first(t.children);
    std::stable_sort(trees.begin(), trees.end(),
                     [](const DeviceTreeNode& a, const DeviceTreeNode& b) { return lowest_gpu(a) < lowest_gpu(b); });
}

// The trees side by side, in as many rows as keep each within `width` (a tree wider than
// that has a row of its own), GPUs first (gpus_first).
std::vector<std::vector<DeviceTreeNode>> device_rows(const NumaDevices* d, int width) {
    std::vector<std::vector<DeviceTreeNode>> rows;
    if (!d) return rows;
    std::vector<DeviceTreeNode> roots = d->roots;
    gpus_first(roots);
    int w = 0;
    for (const auto& r : roots) {
        const int rw = subtree_width(r);
        if (rows.empty() || (w + rw > width && !rows.back().empty())) {
            rows.emplace_back();
            w = 0;
        }
        rows.back().push_back(r);
        w += rw;
    }
    return rows;
}

NumaBox numa_box(const Node& node, int numa, const CpuSet& cpus, uint64_t memory, const NumaDevices* devices) {
    NumaBox b;
    b.numa = numa;
    b.devices = devices;
    b.title = numa >= 0 ? "NUMA " + std::to_string(numa) : std::string("NUMA unknown");
    if (!node.cores.empty()) {
        for (const auto& c : node.cores)
            if (c.pus.intersects(cpus)) b.cells.push_back(c.pus);
    } else {
        for (int pu : cpus.to_vector()) b.cells.push_back(CpuSet::range(pu, pu));
    }
    if (!cpus.empty()) {
        b.subtitle = std::to_string(b.cells.size()) + (node.cores.empty() ? " CPUs " : " cores ") + cpus.to_list();
        if (memory > 0) b.subtitle += " | " + gib(memory);
    }
    int text_w = static_cast<int>(std::max(b.title.size(), b.subtitle.size())) * kCharW + 2 * kPad;
    b.rows = device_rows(devices, kBandW - 2 * kPad);
    int rows_w = 0;
    for (const auto& r : b.rows) rows_w = std::max(rows_w, columns_width(r));
    b.w = std::max({kMinNumaW, rows_w, text_w});
    return b;
}

int lowest_gpu(const NumaBox& b) {
    int lo = std::numeric_limits<int>::max();
    if (b.devices)
        for (const auto& r : b.devices->roots) lo = std::min(lo, lowest_gpu(r));
    return lo;
}

// Packages holding their NUMA nodes, then a box for devices whose NUMA node is
// unknown or has no CPUs. Each is drawn as a band of its own, one under another.
std::vector<PkgBox> cpu_boxes(const Node& node, const std::vector<NumaDevices>& forest) {
    std::map<int, const NumaDevices*> devices;
    for (const auto& d : forest) devices[d.numa] = &d;
    std::vector<PkgBox> pkgs;
    for (const auto& p : node.packages) pkgs.push_back({"Package " + std::to_string(p.os_index), {}, 0, 0});
    PkgBox loose{node.packages.empty() ? "CPUs" : "other", {}, 0, 0};
    std::vector<int> drawn;
    for (const auto& n : node.numa_nodes) {
        if (n.cpus.empty()) continue;
        auto d = devices.find(n.os_index);
        NumaBox box = numa_box(node, n.os_index, n.cpus, n.memory_bytes, d == devices.end() ? nullptr : d->second);
        drawn.push_back(n.os_index);
        const int p = package_of(node, n.cpus);
        (p >= 0 ? pkgs[static_cast<size_t>(p)] : loose).numas.push_back(box);
    }
    if (drawn.empty() && !node.cpus.empty()) {  // no NUMA information: one box for all CPUs
        auto d = devices.find(-1);
        loose.numas.push_back(numa_box(node, -1, node.cpus, 0, d == devices.end() ? nullptr : d->second));
        loose.numas.back().title = "CPUs";
        drawn.push_back(-1);
    }
    for (const auto& d : forest)
        if (std::find(drawn.begin(), drawn.end(), d.numa) == drawn.end())
            loose.numas.push_back(numa_box(node, d.numa, CpuSet(), 0, &d));
    if (!loose.numas.empty()) pkgs.push_back(loose);
    pkgs.erase(std::remove_if(pkgs.begin(), pkgs.end(), [](const PkgBox& p) { return p.numas.empty(); }), pkgs.end());
    // GPUs left to right in index order: within a package, the NUMA nodes with GPUs by their
    // lowest GPU index (SNC: GPU0 may sit in the package's fourth NUMA node), then the others.
    for (auto& p : pkgs)
        std::stable_sort(p.numas.begin(), p.numas.end(),
                         [](const NumaBox& a, const NumaBox& b) { return lowest_gpu(a) < lowest_gpu(b); });
    std::vector<PkgBox> bands;  // a wide package: its NUMA nodes over several bands, each at most kBandW
    for (size_t g = 0; g < pkgs.size(); ++g) {
        PkgBox& p = pkgs[g];
        int w = kPad;
        bands.push_back({p.title, {}, 0, 0, static_cast<int>(g)});
        for (auto& n : p.numas) {
            if (!bands.back().numas.empty() && w + n.w + kPad > kBandW) {
                bands.push_back({p.title, {}, 0, 0, static_cast<int>(g)});
                w = kPad;
            }
            w += n.w + kPad;
            bands.back().numas.push_back(std::move(n));
        }
    }
    pkgs = std::move(bands);
    for (auto& p : pkgs) {  // one band per package, each from the left margin
        p.x = kMargin;
        int inner = p.x + kPad;
        for (auto& n : p.numas) {
            n.x = inner;
            inner += n.w + kPad;
        }
        p.w = inner - p.x;
    }
    return pkgs;
}

int cell_columns(const NumaBox& b) { return std::max(1, (b.w - 2 * kPad + kCellGap) / (kCell + kCellGap)); }

int cell_rows(const NumaBox& b) {
    const int cols = cell_columns(b);
    return (static_cast<int>(b.cells.size()) + cols - 1) / cols;
}

struct Drawing {
    const Node& node;
    const std::vector<int>& islands;
    const Plan* plan;
    PlanOwners owners;
    Canvas edges, boxes;
    std::map<int, std::pair<int, int>> gpu_anchor;  // GPU index -> (centre x, bottom y)
    int leaf_y = 0;
    bool second_row = false;  // a NIC hangs under another in this band
    int text_right = 0;  // right end of the widest text line drawn below the tree
    // Each island of two or more GPUs has one bar, under the device row holding most of its
    // GPUs: (band, row); every GPU of an island carries a stripe in the island's colour.
    std::map<int, std::pair<size_t, size_t>> island_home;
    std::map<int, std::string> island_colour;
    size_t band = 0;
    int band_left = 0, band_right = 0;
};

void task_chips(Drawing& d, int x, int y, const std::vector<int>& tasks) {
    int cx = x;
    for (size_t i = 0; i < tasks.size() && i < 4; ++i) {
        const std::string label = i == 3 ? "+" + std::to_string(tasks.size() - 3) : "T" + std::to_string(tasks[i]);
        const int w = 10 + static_cast<int>(label.size()) * 6;
        const std::string fill = i == 3 ? std::string("#607d8b") : task_color(tasks[i]);
        d.boxes.rect(cx, y - 10, w, 14, "", 3, "fill:" + fill);
        d.boxes.text(cx + w / 2, y, label, "chip", "middle", "fill:" + ink_on(fill));
        cx += w + 3;
    }
}

std::vector<int> tasks_of(const std::map<int, std::vector<int>>& m, int key) {
    auto it = m.find(key);
    return it == m.end() ? std::vector<int>{} : it->second;
}

// A GPU's model in its box, never cut: one line, in a smaller font when long (down to 8 px),
// else two lines broken at the space nearest the middle (7 to 9 px; one <text>, so the model
// reads whole, the first line's trailing space joining the two).
void draw_model(Drawing& d, const std::string& model, int x, int y) {
    const int width = kGpuW - 16;
    const double at11 = text_width(model, 11) * 1.08;
    size_t cut = std::string::npos;
    for (size_t p = model.find(' '); p != std::string::npos; p = model.find(' ', p + 1))
        if (cut == std::string::npos || std::max(p, model.size() - p) < std::max(cut, model.size() - cut)) cut = p;
    if (at11 * 8 / 11 <= width || cut == std::string::npos) {
        d.boxes.text(x, y + 31, model, "", nullptr, font_to_fit(model, width));
        return;
    }
    const std::string first = model.substr(0, cut + 1), second = model.substr(cut + 1);
    const double wider = std::max(text_width(first, 11), text_width(second, 11)) * 1.08;
    const int px = std::max(7, std::min(9, static_cast<int>(11.0 * width / wider)));
    d.boxes.raw("<text x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y + 27) + "\" style=\"font-size:" +
                std::to_string(px) + "px\"><tspan>" + attr(first) + "</tspan><tspan x=\"" + std::to_string(x) +
                "\" dy=\"" + std::to_string(px + 1) + "\">" + attr(second) + "</tspan></text>\n");
}

void draw_gpu(Drawing& d, const Gpu& g, int x, int y) {
    const auto tasks = d.plan ? tasks_of(d.owners.gpu_tasks, g.index) : std::vector<int>{};
    std::string style;
    if (!tasks.empty())
        style = "fill:" + tint(task_color(tasks[0]), 0.82) + ";stroke:" + task_color(tasks[0]) + ";stroke-width:3";
    d.boxes.rect(x, y, kGpuW, kLeafH, "gpu", 6, style);
    d.boxes.text(x + 8, y + 16, "GPU" + std::to_string(g.index), "b");
    if (g.numa >= 0) d.boxes.text(x + kGpuW - 8, y + 16, "NUMA " + std::to_string(g.numa), "s", "end");
    draw_model(d, g.model.empty() ? vendor_label(g.vendor) + " GPU" : short_gpu_model(g.model), x + 8, y);
    d.boxes.text(x + 8, y + 46, g.pci.to_string(), "m");
    if (!tasks.empty()) task_chips(d, x + 8, y + 65, tasks);
    else if (g.memory_bytes > 0) d.boxes.text(x + 8, y + 64, gib(g.memory_bytes), "s");
    const size_t gi = static_cast<size_t>(g.index);
    if (gi < d.islands.size()) {
        auto c = d.island_colour.find(d.islands[gi]);
        if (c != d.island_colour.end()) d.boxes.rect(x + 6, y + kLeafH - 5, kGpuW - 12, 3, "", 1, "fill:" + c->second);
    }
    d.gpu_anchor[g.index] = {x + kGpuW / 2, y + kLeafH};
}

std::string port_summary(const Nic& n) {
    if (n.ports.empty()) return n.netdevs.empty() ? std::string() : n.netdevs.front();
    const NicPort& p = n.ports.front();
    std::string s = "port" + std::to_string(p.number);
    if (p.rate_gbps > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %gGb/s", p.rate_gbps);
        s += buf;
    } else if (!p.state.empty()) {
        s += " " + p.state;
    }
    if (n.ports.size() > 1) s += " +" + std::to_string(n.ports.size() - 1);
    return s;
}

void draw_nic(Drawing& d, const Nic& n, int x, int y) {
    const bool usable = n.usable();
    std::vector<int> tasks;
    if (d.plan) {
        auto it = d.owners.nic_tasks.find(n.name);
        if (it != d.owners.nic_tasks.end()) tasks = it->second;
    }
    std::string style;
    if (!tasks.empty()) style = "stroke:" + task_color(tasks[0]) + ";stroke-width:3";
    d.boxes.rect(x, y, kNicW, kLeafH, usable ? "nic" : "off", 6, style);
    d.boxes.text(x + 8, y + 16, n.name, "b", nullptr, font_to_fit(n.name, kNicW - 16));
    d.boxes.text(x + 8, y + 31, n.pci != PciAddress{} || n.pci_object >= 0 ? n.pci.to_string() : "no PCI address", "m");
    const std::string ports = port_summary(n);
    d.boxes.text(x + 8, y + 46, ports, "s", nullptr, font_to_fit(ports, kNicW - 16));
    if (!tasks.empty()) task_chips(d, x + 8, y + 65, tasks);
    else if (usable) d.boxes.text(x + 8, y + 64, "usable", "ok");
    else {
        const std::string why = nic_unusable_reason(n);
        d.boxes.text(x + 8, y + 64, why, "bad", nullptr, font_to_fit(why, kNicW - 16));
    }
}

int place(Drawing& d, const DeviceTreeNode& t, int x);

// The top of a placed subtree (a leaf's top or its switch's top).
int top_of(const Drawing& d, const DeviceTreeNode& t) {
    return t.children.empty() ? d.leaf_y : d.leaf_y - switch_depth(t) * kLevelH;
}

// Places `kids` in columns from x: a column's second NIC hangs under the first, joined to
// it. Returns each column's (centre x, top y) to connect the parent to.
std::vector<std::pair<int, int>> place_columns(Drawing& d, const std::vector<DeviceTreeNode>& kids, int x) {
    std::vector<std::pair<int, int>> tops;
    for (const auto& col : columns(kids)) {
        const int centre = place(d, *col.front(), x);
        tops.emplace_back(centre, top_of(d, *col.front()));
        if (col.size() > 1) {
            const int lower = d.leaf_y + kLeafH + kRowGap;
            draw_nic(d, d.node.nics[static_cast<size_t>(col[1]->index)], x + kLeafGap / 2, lower);
            d.edges.elbow(centre, d.leaf_y + kLeafH, centre, lower);
            d.second_row = true;
        }
        x += subtree_width(*col.front());
    }
    return tops;
}

// Places the subtree with its left edge at x; returns its centre x.
int place(Drawing& d, const DeviceTreeNode& t, int x) {
    const int width = subtree_width(t);
    if (t.children.empty()) {
        const int left = x + kLeafGap / 2;
        if (t.kind == DeviceTreeNode::GpuLeaf) draw_gpu(d, d.node.gpus[static_cast<size_t>(t.index)], left, d.leaf_y);
        else draw_nic(d, d.node.nics[static_cast<size_t>(t.index)], left, d.leaf_y);
        return left + leaf_width(t) / 2;
    }
    const std::vector<std::pair<int, int>> tops = place_columns(d, t.children, x + (width - columns_width(t.children)) / 2);
    const int centre = (tops.front().first + tops.back().first) / 2;
    const int y = d.leaf_y - switch_depth(t) * kLevelH;
    for (const auto& top : tops) d.edges.elbow(centre, y + kSwitchH, top.first, top.second);
    d.boxes.rect(centre - kSwitchW / 2, y, kSwitchW, kSwitchH, "sw", 4);
    const std::string label = tree_node_label(d.node, t);
    const size_t space = label.find(' ', label.find(' ') + 1);
    if (t.kind == DeviceTreeNode::Switch && space != std::string::npos) {
        d.boxes.text(centre, y + 13, label.substr(0, space), "s", "middle");
        d.boxes.text(centre, y + 26, label.substr(space + 1), "m", "middle");
    } else {
        d.boxes.text(centre, y + 20, label, "s", "middle");
    }
    return centre;
}

// "NVLink NV18 via NVSwitch", "xGMI x1"; an island whose GPUs are not all linked pairwise
// (joined through each other) says how many of its pairs are: "xGMI x1, 12 of 28 pairs linked".
std::string island_link_text(const Node& node, const std::vector<int>& gpus) {
    int count = 0;
    size_t linked = 0;
    bool via_switch = false;
    for (size_t i = 0; i < gpus.size(); ++i)
        for (size_t j = i + 1; j < gpus.size(); ++j)
            if (const GpuLink* l = node.link(gpus[i], gpus[j])) {
                count = std::max(count, l->count);
                via_switch |= l->via_switch;
                ++linked;
            }
    std::string kind = island_kind(node, gpus);
    if (count > 0 && kind == "NVLink") kind += " NV" + std::to_string(count);
    if (count > 0 && kind == "xGMI") kind += " x" + std::to_string(count);
    if (via_switch) kind += " via NVSwitch";
    const size_t pairs = gpus.size() * (gpus.size() - 1) / 2;
    if (linked > 0 && linked < pairs)
        kind += ", " + std::to_string(linked) + " of " + std::to_string(pairs) + " pairs linked";
    return kind;
}

std::string island_color(const std::string& kind) {
    if (kind.rfind("NVLink", 0) == 0) return "#4e7d0e";
    if (kind.rfind("xGMI", 0) == 0) return "#a31515";
    if (kind.rfind("C2C", 0) == 0) return "#6a1b9a";
    return "#546e7a";
}

// The bars of the islands whose home is device row `row` of the current band, under its
// GPUs; returns the y below the last bar.
int draw_islands(Drawing& d, int y0, size_t row) {
    std::vector<int> row_end;  // right end of the last bar in each row
    int bottom = y0;
    for (const auto& kv : island_members(d.islands)) {
        const auto& gpus = kv.second;
        if (gpus.size() < 2) continue;
        auto home = d.island_home.find(kv.first);
        if (home == d.island_home.end() || home->second != std::make_pair(d.band, row)) continue;
        int lo = 1 << 30, hi = 0;
        for (int g : gpus) {
            auto a = d.gpu_anchor.find(g);
            if (a == d.gpu_anchor.end()) continue;
            lo = std::min(lo, a->second.first);
            hi = std::max(hi, a->second.first);
        }
        if (hi < lo) continue;
        const std::string kind = island_link_text(d.node, gpus);
        const std::string label = "island " + std::to_string(kv.first) + ": GPU " + index_list(gpus) + ", " + kind;
        const int label_w = static_cast<int>(label.size()) * 6 + 16;
        const int mid = (lo + hi) / 2;
        lo = std::min(lo - 24, mid - label_w / 2);
        hi = std::max(hi + 24, mid + label_w / 2);
        if (hi - lo <= d.band_right - d.band_left) {  // inside the package's box
            if (lo < d.band_left) hi += d.band_left - lo, lo = d.band_left;
            if (hi > d.band_right) lo -= hi - d.band_right, hi = d.band_right;
        }
        size_t row = 0;
        while (row < row_end.size() && row_end[row] >= lo - 8) ++row;
        if (row == row_end.size()) row_end.push_back(0);
        row_end[row] = hi;
        const int y = y0 + 14 + static_cast<int>(row) * kBarRow;
        const std::string color = d.island_colour.at(kv.first);
        for (int g : gpus) {
            auto a = d.gpu_anchor.find(g);
            if (a == d.gpu_anchor.end()) continue;
            d.edges.raw("<path d=\"M" + std::to_string(a->second.first) + " " + std::to_string(a->second.second) + " V" +
                        std::to_string(y) + "\" style=\"stroke:" + color + ";stroke-width:2;fill:none\"/>\n");
        }
        d.boxes.rect(lo, y, hi - lo, kBarH, "", kBarH / 2, "fill:" + color);
        d.boxes.text((lo + hi) / 2, y + 14, label, "bar", "middle", "fill:" + ink_on(color));
        bottom = std::max(bottom, y + kBarH);
    }
    return bottom;
}

// One core: a square, split into one strip per hardware thread (SMT pairs show as two
// halves), each in the colour of the task that has that thread.
void draw_core(Drawing& d, const CpuSet& pus, int x, int y) {
    const std::vector<int> threads = pus.to_vector();
    auto fill = [&](int pu) {
        auto it = d.plan ? d.owners.pu_task.find(pu) : d.owners.pu_task.end();
        return it != d.owners.pu_task.end() ? "fill:" + task_color(it->second) : std::string();
    };
    if (threads.size() < 2) {
        d.boxes.rect(x, y, kCell, kCell, "core", 2, threads.empty() ? std::string() : fill(threads.front()));
        return;
    }
    const int n = static_cast<int>(std::min<size_t>(threads.size(), 4));
    const int strip = std::max(1, (kCell - (n - 1)) / n);  // 1 px of the NUMA box between strips
    for (int i = 0; i < n; ++i) {
        const int left = x + i * (strip + 1);
        d.boxes.rect(left, y, i == n - 1 ? x + kCell - left : strip, kCell, "core", 1, fill(threads[static_cast<size_t>(i)]));
    }
}

// The NUMA nodes of one band (the package's box is drawn around its bands by topology_svg).
void draw_cpus(Drawing& d, const std::vector<PkgBox>& pkgs, int y, int numa_h) {
    for (const auto& p : pkgs) {
        const int ny = y + kPkgHeader;
        for (const auto& n : p.numas) {
            d.boxes.rect(n.x, ny, n.w, numa_h, "numa", 6);
            d.boxes.text(n.x + kPad, ny + 16, n.title, "b");
            if (!n.subtitle.empty()) d.boxes.text(n.x + kPad, ny + 30, n.subtitle, "s");
            const int cols = cell_columns(n);
            for (size_t i = 0; i < n.cells.size(); ++i) {
                const int cx = n.x + kPad + static_cast<int>(i % static_cast<size_t>(cols)) * (kCell + kCellGap);
                const int cy = ny + kNumaHeader + static_cast<int>(i / static_cast<size_t>(cols)) * (kCell + kCellGap);
                draw_core(d, n.cells[i], cx, cy);
            }
        }
    }
}

// The plan as a table under the picture, one colour swatch per task.
// The plan's header, "Plan: mode closest, 8 tasks, node NICs a,b,...", in lines of at most
// `width`: a long NIC list wraps after a comma instead of widening the picture.
std::vector<std::string> legend_header(const Plan& plan, int width) {
    std::vector<std::string> lines{std::string("Plan: mode ") + mode_name(plan.mode) + ", " +
                                   std::to_string(plan.tasks.size()) + " task" + (plan.tasks.size() == 1 ? "" : "s") +
                                   ", node NICs "};
    if (plan.node_nics.empty()) lines.back() += "none";
    for (size_t i = 0; i < plan.node_nics.size(); ++i) {
        const std::string word = plan.node_nics[i] + (i + 1 < plan.node_nics.size() ? "," : "");
        if (static_cast<int>((lines.back().size() + word.size()) * kCharW) > width && lines.back().size() > 12)
            lines.push_back("  ");
        lines.back() += word;
    }
    return lines;
}

int draw_plan_legend(Drawing& d, int y, int header_width) {
    const Plan& plan = *d.plan;
    for (const std::string& line : legend_header(plan, header_width)) {
        d.boxes.text(kMargin, y + 14, line, "b");
        d.text_right = std::max(d.text_right, kMargin + static_cast<int>(line.size()) * kCharW);
        y += 16;
    }
    y -= 16;
    const std::vector<std::vector<std::string>> rows = plan_rows(plan);
    std::vector<size_t> width(rows.front().size(), 1);
    for (const auto& r : rows)
        for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    int ry = y + 36;
    for (size_t r = 0; r < rows.size(); ++r) {
        int x = kMargin + 18;
        if (r > 0) d.boxes.rect(kMargin, ry - 10, 12, 12, "", 2, "fill:" + task_color(plan.tasks[r - 1].task));
        for (size_t c = 0; c < rows[r].size(); ++c) {
            d.boxes.text(x, ry, rows[r][c].empty() ? "-" : rows[r][c], r == 0 ? "tm b" : "tm");
            x += static_cast<int>(width[c] + 2) * kMonoCharW;
        }
        d.text_right = std::max(d.text_right, x);
        ry += 16;
    }
    for (const auto& n : plan.notes)
        for (const std::string& line : wrap_words("note: " + n, static_cast<size_t>(header_width / 6))) {
            d.boxes.text(kMargin, ry + 4, line, "s");
            d.text_right = std::max(d.text_right, kMargin + static_cast<int>(line.size()) * 6);
            ry += 16;
        }
    return ry;
}

int draw_key(Drawing& d, int y) {
    int x = kMargin;
    auto item = [&](const std::string& cls, const std::string& style, const std::string& label) {
        if (x > kMargin && x + 48 + static_cast<int>(label.size()) * 6 > kBandW) {  // wrap, never widen
            x = kMargin;
            y += 20;
        }
        d.boxes.rect(x, y, 22, 14, cls, 3, style);
        d.boxes.text(x + 28, y + 11, label, "s");
        x += 48 + static_cast<int>(label.size()) * 6;
        d.text_right = std::max(d.text_right, x);
    };
    item("gpu", "", "GPU");
    item("nic", "", "NIC for GPU traffic");
    item("off", "", "NIC not used (down, storage, no RDMA)");
    item("sw", "", "PCIe switch / host bridge");
    item("", "fill:" + island_color("NVLink"), "GPU island");
    item("core", "", "CPU core (halves: its hardware threads)");
    return y + 20;
}

// One band of a package: its NUMA nodes, their devices under them, and the bars of the
// islands whose home is here. Returns the bottom.
int draw_band(Drawing& d, const PkgBox& p, int y, int& right) {
    d.band_left = p.x + kPad / 2;
    d.band_right = p.x + p.w - kPad / 2;
    int numa_rows = 0;
    size_t device_rows = 0;
    for (const auto& n : p.numas) {
        numa_rows = std::max(numa_rows, cell_rows(n));
        device_rows = std::max(device_rows, n.rows.size());
    }
    const int numa_h = kNumaHeader + numa_rows * (kCell + kCellGap) + kPad;
    draw_cpus(d, {p}, y, numa_h);
    right = std::max(right, p.x + p.w);
    int bottom = y + kPkgHeader + numa_h;
    for (size_t row = 0; row < device_rows; ++row) {  // each row under the one before
        int depth = 0;
        for (const auto& n : p.numas)
            if (row < n.rows.size())
                for (const auto& r : n.rows[row]) depth = std::max(depth, switch_depth(r));
        const int from = bottom;  // where the row's connectors start
        d.leaf_y = from + kPad + 36 + depth * kLevelH;
        d.second_row = false;
        d.gpu_anchor.clear();
        for (const auto& n : p.numas) {
            if (row >= n.rows.size()) continue;
            const auto tops = place_columns(d, n.rows[row], n.x + (n.w - columns_width(n.rows[row])) / 2);
            if (row > 0) d.boxes.text(n.x, from + 14, n.title + ", continued", "s");
            for (const auto& t : tops) d.edges.elbow(t.first, row == 0 ? from : from + 20, t.first, t.second);
        }
        bottom = draw_islands(d, d.leaf_y + kLeafH + (d.second_row ? kRowGap + kLeafH : 0), row);
    }
    return bottom;
}

// The GPUs of a device tree.
void gpus_under(const DeviceTreeNode& t, std::vector<int>& out) {
    if (t.kind == DeviceTreeNode::GpuLeaf) out.push_back(t.index);
    for (const auto& c : t.children) gpus_under(c, out);
}

// Each island's colour and home: the (band, device row) holding most of its GPUs, the first
// such on a tie.
void place_islands(Drawing& d, const std::vector<PkgBox>& bands) {
    std::map<int, std::map<std::pair<size_t, size_t>, int>> count;
    for (size_t b = 0; b < bands.size(); ++b)
        for (const auto& n : bands[b].numas)
            for (size_t r = 0; r < n.rows.size(); ++r) {
                std::vector<int> gpus;
                for (const auto& t : n.rows[r]) gpus_under(t, gpus);
                for (int g : gpus)
                    if (static_cast<size_t>(g) < d.islands.size() && d.islands[static_cast<size_t>(g)] >= 0)
                        ++count[d.islands[static_cast<size_t>(g)]][{b, r}];
            }
    for (const auto& kv : island_members(d.islands)) {
        if (kv.second.size() < 2) continue;
        d.island_colour[kv.first] = island_color(island_link_text(d.node, kv.second));
        int best = 0;
        for (const auto& place : count[kv.first])
            if (place.second > best) {
                best = place.second;
                d.island_home[kv.first] = place.first;
            }
    }
}

}  // namespace

std::string topology_svg(const Node& node, const std::vector<int>& islands, const Plan* plan) {
    const std::vector<NumaDevices> forest = device_forest(node);
    const std::vector<PkgBox> pkgs = cpu_boxes(node, forest);
    Drawing d{node, islands, plan, plan ? plan_owners(*plan) : PlanOwners{}, {}, {}, {}, 0, false, 0, {}, {}, 0, 0, 0};
    place_islands(d, pkgs);

    int usable = 0;
    for (const auto& n : node.nics) usable += n.usable() ? 1 : 0;
    const std::string title = node.hostname.empty() ? std::string("gputopo") : node.hostname;
    const std::string subtitle = gpus_caption(node) + ", " + count_of(node.nics.size(), "NIC") + " (" +
                                 std::to_string(usable) + " usable RDMA), " +
                                 count_of(node.numa_nodes.size(), "NUMA node") + ", " +
                                 count_of(static_cast<size_t>(node.cpus.count()), "CPU") +
                                 (node.source.empty() ? std::string() : " | " + node.source);
    d.boxes.text(kMargin, 28, title, "t");

    int right = kMargin;
    int y = 62;
    Canvas back;  // the package boxes, under everything else
    int top = y, w = 0;  // of the current package's box
    for (size_t b = 0; b < pkgs.size(); ++b) {
        const PkgBox& p = pkgs[b];
        const bool first = b == 0 || pkgs[b - 1].group != p.group;
        const bool last = b + 1 == pkgs.size() || pkgs[b + 1].group != p.group;
        if (first) {
            top = y;
            w = 0;
            for (size_t k = b; k < pkgs.size() && pkgs[k].group == p.group; ++k) w = std::max(w, pkgs[k].w);
            d.boxes.text(p.x + kPad, y + 17, p.title, "b");
        }
        d.band = b;
        y = draw_band(d, p, y, right) + kPad;
        if (last) {
            back.rect(p.x, top, w, y - top, "pkg", 8);
            y += kGap;
        }
    }
    y += 8;
    y = plan ? draw_plan_legend(d, y, std::max(right, 700) - kMargin) + 8 : draw_key(d, y);
    const size_t wrap = static_cast<size_t>((std::max(right, 700) - kMargin) / 6);
    for (const auto& w : node.warnings)
        for (const std::string& line : wrap_words("warning: " + w, wrap)) {
            d.boxes.text(kMargin, y + 12, line, "w");
            d.text_right = std::max(d.text_right, kMargin + static_cast<int>(line.size()) * 6);
            y += 16;
        }
    int width = std::max(right, d.text_right) + kMargin;
    width = std::max(width, static_cast<int>(text_width(title, 17)) + 2 * kMargin);
    // The subtitle (with the topology file's path) is shortened to the picture, never widens it.
    d.boxes.text(kMargin, 47, fit_text(subtitle, 12, width - 2 * kMargin), "st");
    const int height = y + kMargin;

    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
           std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) + "\">\n";
    out += "<title>" + attr(title + ": " + subtitle) + "</title>\n";
    out += "<style>" + std::string(kStyle) + "</style>\n";
    out += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    out += back.str();
    out += d.edges.str();
    out += d.boxes.str();
    out += "</svg>\n";
    return out;
}

}  // namespace gputopo
