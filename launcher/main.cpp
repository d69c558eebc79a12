// gputopo-launch: see launcher/run.cpp and man/gputopo-launch.1.
#include <exception>
#include <cstdio>

#include "launcher/run.hpp"

int main(int argc, char** argv) {
    try {
        return gputopo::launch::launcher_main(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gputopo-launch: internal error: %s\n", e.what());
        return 70;
    }
}
