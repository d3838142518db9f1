// Stop and resume for `doppler train` (learn_resume.hpp).

#include "learn_resume.hpp"

#include <doppler/runtime/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace doppler::cli {

namespace {

std::atomic<bool> stop_flag{false};

extern "C" void on_stop_signal(int) {
  stop_flag.store(true);
  static const char msg[] = "\ntrain: stopping after this batch and saving its state (again: quit at once)\n";
  [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
}

}  // namespace

bool stop_requested() { return stop_flag.load(); }

struct stop_on_signals::saved {
  struct sigaction int_ {}, term_ {};
};

stop_on_signals::stop_on_signals() : old_(std::make_unique<saved>()) {
  stop_flag.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second signal: the default action
  for (auto [sig, old] : {std::pair{SIGINT, &old_->int_}, std::pair{SIGTERM, &old_->term_}}) {
    sigaction(sig, &sa, old);
    if (old->sa_handler == SIG_IGN) sigaction(sig, old, nullptr);  // ignored at start: keep it so
  }
}

stop_on_signals::~stop_on_signals() {
  sigaction(SIGINT, &old_->int_, nullptr);
  sigaction(SIGTERM, &old_->term_, nullptr);
}

namespace {

/// Settings `doppler train` gained after training states were first written (173f744), each with
/// the value that trains as before it existed: a state written without the key is continued by a
/// command that has that value.
const nlohmann::json settings_added_later = {{"--sibling-feature", false},
                                             {"--teacher-symmetry", false},
                                             {"--il-teacher-forcing", 0.0},
                                             {"--dynamic-sel", false},
                                             {"--init", ""},
                                             {"--teacher (the file's content, FNV-1a)", ""}};

}  // namespace

void check_resume_settings(const std::string& file, const nlohmann::json& then, const nlohmann::json& now) {
  for (const auto& [key, value] : now.items()) {
    const auto it = then.find(key);
    if (it == then.end() && settings_added_later.contains(key) && settings_added_later[key] == value) continue;
    if (it == then.end() || *it != value)
      throw error(errc::bad_argument, file, "--resume",
                  fmt::format("the interrupted training ran with {} {}, this command has {}: --resume continues the "
                              "same command (or remove the file to start over)",
                              key, it == then.end() ? "(not recorded)" : it->dump(), value.dump()));
  }
}

}  // namespace doppler::cli
