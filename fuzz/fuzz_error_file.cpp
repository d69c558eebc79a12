// The program's TORCHELASTIC_ERROR_FILE (launcher/failure/error_file.cpp): torch's JSON
// record parsed, then classified with the launcher's failure classes.
#include "fuzz/fuzz_common.hpp"
#include "launcher/failure/classify.hpp"
#include "launcher/failure/error_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text = gputopo_fuzz::text_of(data, size);
    gputopo_fuzz::expect_clean([&] {
        gputopo::launch::ErrorRecord r = gputopo::launch::parse_error_record(text);
        if (r.found != r.problem.empty()) __builtin_trap();  // one of the two, always
        gputopo::launch::ChildEnd end;
        end.exit_code = 1;
        end.error_record = r.message + "\n" + r.callstack;
        (void)gputopo::launch::classify(end, {});
    });
    return 0;
}
