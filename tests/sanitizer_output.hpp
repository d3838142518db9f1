#pragma once
// Sanitizer reports in the output of a child process a test started (`doppler`, a worker, ...).
// ASan and LSan write theirs where ASAN_OPTIONS' log_path says (scripts/asan-check.sh collects them),
// but GCC's UBSan, a separate runtime beside ASan's, ignores log_path and exitcode: it prints to the
// child's stderr and exits 1, which a test expecting bad input to exit 1 would take for success.
// So every helper that runs a child checks its captured stderr with this.
#include <string>

namespace sanitizer_output {

/// Whether `text` holds a UBSan, ASan or LSan report.
inline bool has_report(const std::string& text) {
  return text.find(": runtime error: ") != std::string::npos ||
         text.find("ERROR: AddressSanitizer") != std::string::npos ||
         text.find("ERROR: LeakSanitizer") != std::string::npos;
}

}  // namespace sanitizer_output
