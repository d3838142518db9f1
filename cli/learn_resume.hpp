#pragma once
// `doppler train`'s stop-and-resume plumbing (cmd_learn_resume.cpp): Ctrl-C / SIGTERM ask the
// trainer to stop after its batch, and --resume checks that it repeats the interrupted command.

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>

namespace doppler::cli {

/// Whether a SIGINT or SIGTERM arrived while a stop_on_signals was alive (train_options::stop).
bool stop_requested();

/// While alive, the first SIGINT or SIGTERM asks train() to stop after its batch (a second one
/// gets the default action); a signal that was ignored when it was made stays ignored (nohup, a
/// background job of a non-interactive shell). The previous handlers come back when it goes.
class stop_on_signals {
 public:
  stop_on_signals();
  ~stop_on_signals();
  stop_on_signals(const stop_on_signals&) = delete;
  stop_on_signals& operator=(const stop_on_signals&) = delete;

 private:
  struct saved;
  std::unique_ptr<saved> old_;
};

/// Throws errc::bad_argument (file `file`, field --resume) naming the first setting in which `now`
/// differs from `then` (the settings a training state was saved with). A setting added to `doppler
/// train` after `then` was written is missing there; it counts as recorded with the value that
/// trains as before it existed (off), so such states still resume with the flag left off.
void check_resume_settings(const std::string& file, const nlohmann::json& then, const nlohmann::json& now);

}  // namespace doppler::cli
