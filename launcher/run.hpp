// gputopo-launch from argv to exit status. main.cpp only calls this.
#pragma once

namespace gputopo::launch {

int launcher_main(int argc, char** argv);

}  // namespace gputopo::launch
