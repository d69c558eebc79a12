// hwloc XML reader (libxml2 checks, then libhwloc's import) -> node -> snapshot, plans, NCCL writer.
//
// Structure-aware (issue 20, H1): half of the mutations are the kind that
// found libhwloc's crashes on hwloc 1.x files: pick one <object ...> start tag
// and drop one of its attributes, drop its CPU or node sets, or give it another
// type; the other half are libFuzzer's own byte mutations (with
// fuzz/dict/hwloc_xml.dict).
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.hpp"
#include "topo/sources/hwloc_source.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

const char* const kTypes[] = {"Machine", "System", "Group",   "NUMANode", "MemCache", "Package", "Socket", "Die",
                              "Cache",   "L1Cache", "L2Cache", "L3Cache", "L1iCache", "Core",    "PU",     "Bridge",
                              "PCIDev",  "OSDev",  "Misc"};

void erase_attr(std::string& tag, const std::string& name) {
    size_t p = tag.find(" " + name + "=\"");
    if (p == std::string::npos) return;
    size_t end = tag.find('"', p + name.size() + 3);
    if (end != std::string::npos) tag.erase(p, end + 1 - p);
}

// One object-level edit of `s`; false when there is no object tag to edit.
bool mutate_object(std::string& s, std::minstd_rand& rng) {
    std::vector<size_t> tags;
    for (size_t p = s.find("<object "); p != std::string::npos && tags.size() < 8192; p = s.find("<object ", p + 1))
        tags.push_back(p);
    if (tags.empty()) return false;
    const size_t start = tags[rng() % tags.size()];
    const size_t end = s.find('>', start);
    if (end == std::string::npos) return false;
    std::string tag = s.substr(start, end - start);
    switch (rng() % 4) {
    case 0: {  // drop one attribute
        std::vector<std::string> names;
        for (size_t a = tag.find(' '); a != std::string::npos; a = tag.find(' ', a + 1)) {
            size_t eq = tag.find("=\"", a);
            if (eq == std::string::npos) break;
            std::string n = tag.substr(a + 1, eq - a - 1);
            if (!n.empty() && n.find_first_of(" \"<>") == std::string::npos) names.push_back(n);
        }
        if (names.empty()) return false;
        erase_attr(tag, names[rng() % names.size()]);
        break;
    }
    case 1:  // drop the CPU sets
        for (const char* a : {"cpuset", "complete_cpuset", "online_cpuset", "allowed_cpuset"}) erase_attr(tag, a);
        break;
    case 2:  // drop the node sets
        for (const char* a : {"nodeset", "complete_nodeset", "allowed_nodeset"}) erase_attr(tag, a);
        break;
    default: {  // another type
        size_t p = tag.find("type=\"");
        if (p == std::string::npos) return false;
        size_t q = tag.find('"', p + 6);
        if (q == std::string::npos) return false;
        tag.replace(p + 6, q - p - 6, kTypes[rng() % (sizeof kTypes / sizeof kTypes[0])]);
    }
    }
    s = s.substr(0, start) + tag + s.substr(end);
    return true;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    std::minstd_rand rng(seed);
    if (rng() % 2) {
        std::string s(reinterpret_cast<const char*>(data), size);
        if (mutate_object(s, rng) && s.size() <= max_size) {
            std::memcpy(data, s.data(), s.size());
            return s.size();
        }
    }
    return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::Node node = gputopo::read_hwloc_xml_buffer(gputopo_fuzz::text_of(data, size), "fuzz.xml");
        gputopo_fuzz::exercise_node(node);
    });
    return 0;
}
