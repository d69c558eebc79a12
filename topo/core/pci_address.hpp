// A PCI bus id, "dddd:bb:dd.f". Ordering is numeric (domain, bus, device,
// function), which is the order Slurm and CUDA_DEVICE_ORDER=PCI_BUS_ID count GPUs in.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

namespace gputopo {

struct PciAddress {
    uint32_t domain = 0;
    uint32_t bus = 0;
    uint32_t device = 0;
    uint32_t function = 0;

    // Accepts "dddd:bb:dd.f", "bb:dd.f" (domain 0) and NVML's 8-digit domain
    // form "00000000:bb:dd.f", any case. Throws ParseError on anything else.
    static PciAddress parse(const std::string& text);
    // Returns false instead of throwing.
    static bool try_parse(const std::string& text, PciAddress& out);

    std::string to_string() const;  // lowercase "0000:5d:00.0"

    bool operator<(const PciAddress& o) const {
        return std::tie(domain, bus, device, function) < std::tie(o.domain, o.bus, o.device, o.function);
    }
    bool operator==(const PciAddress& o) const {
        return domain == o.domain && bus == o.bus && device == o.device && function == o.function;
    }
    bool operator!=(const PciAddress& o) const { return !(*this == o); }
};

}  // namespace gputopo
