#include <catch2/catch.hpp>

#include "topo/core/errors.hpp"
#include "topo/core/pci_address.hpp"

using gputopo::PciAddress;

TEST_CASE("PCI bus ids parse in the forms tools print", "[pci]") {
    CHECK(PciAddress::parse("0000:5d:00.0").to_string() == "0000:5d:00.0");
    CHECK(PciAddress::parse("0000:5D:00.0").to_string() == "0000:5d:00.0");
    CHECK(PciAddress::parse("00000000:1B:00.0").to_string() == "0000:1b:00.0");  // NVML
    CHECK(PciAddress::parse("3b:00.1").to_string() == "0000:3b:00.1");
    CHECK(PciAddress::parse("0004:04:00.0").domain == 4);
    CHECK(PciAddress::parse("0000:1b:00.0") < PciAddress::parse("0000:5d:00.0"));
    CHECK(PciAddress::parse("0000:ff:00.0") < PciAddress::parse("0001:00:00.0"));
    for (const char* bad : {"", "0000:5d:00", "zz:00.0", "0000:5d:20.0", "0000:5d:00.8", "0000:100:00.0"}) {
        INFO(bad);
        CHECK_THROWS_AS(PciAddress::parse(bad), gputopo::ParseError);
    }
}
