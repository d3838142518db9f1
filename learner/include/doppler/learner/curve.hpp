#pragma once
/// Training-curve outputs: a CSV (episode, phase, makespan, best, loss, agreement) and an SVG plot
/// of makespan and best-so-far per episode with the cp teacher and the lower bound as lines; rows of a
/// "...-greedy" phase (phase III's measured greedy evaluations) are drawn as dots.

#include <doppler/learner/trainer.hpp>

#include <string>
#include <vector>

namespace doppler::learner {

/// CSV text of the curve (header line, then one row per episode).
/// With `graph_column` (several problems) a seventh column, `graph`: train_row::problem.
std::string curve_csv(const std::vector<train_row>& rows, bool graph_column = false);
/// A self-contained SVG plot; reference lines are drawn when > 0.
std::string curve_svg(const std::vector<train_row>& rows, double cp_makespan, double lower_bound,
                      const std::string& title);
/// Writes text to a file atomically (temp + rename); errc::io naming the file on failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace doppler::learner
