#pragma once
/// Forward declarations and small enums of doppler::actors (no CAF include: cheap to include).

#include <cstdint>

namespace doppler::actors {

/// Which op outputs a run hands back: the exits (ops without consumers) or every op.
enum class keep_outputs : std::uint8_t { exits, all };

class backend;
struct run_plan;
struct run_report;

}  // namespace doppler::actors

namespace doppler {
class engine;
struct engine_options;
struct run_options;
struct run_result;
class learner_interface;
class learner_client;
}  // namespace doppler
