// Training-curve CSV and SVG (curve.hpp).
#include <doppler/learner/curve.hpp>

#include <doppler/runtime/io.hpp>
#include <doppler/runtime/xml.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace doppler::learner {

std::string curve_csv(const std::vector<train_row>& rows, bool graph_column) {
  // Several problems (train on several graphs): a seventh column names the row's problem.
  std::string out = graph_column ? "episode,phase,makespan,best,loss,agreement,graph\n"
                            : "episode,phase,makespan,best,loss,agreement\n";
  for (const auto& r : rows) {
    out += fmt::format("{},{},{:.9g},{:.9g},{:.6g},{}", r.episode, r.phase, r.makespan, r.best, r.loss,
                       r.agreement >= 0 ? fmt::format("{:.4f}", r.agreement) : std::string());
    out += graph_column ? fmt::format(",{}\n", r.problem) : std::string("\n");
  }
  return out;
}

std::string curve_svg(const std::vector<train_row>& rows, double cp_makespan, double lower_bound,
                      const std::string& title) {
  const double w = 800, h = 420, l = 70, r = 20, t = 40, b = 50;
  // Evaluation rows (phase "...-greedy": phase III's measured greedy placements) are dots, not part
  // of the episode lines; they repeat the episode number they follow.
  auto is_eval = [](const train_row& x) { return x.phase.ends_with("-greedy"); };
  std::vector<train_row> evals;
  std::vector<train_row> eps;
  for (const auto& row : rows) (is_eval(row) ? evals : eps).push_back(row);
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& row : rows) {
    lo = std::min({lo, row.best, row.makespan});  // a teacher-forced phase I row may lie below best
    hi = std::max(hi, row.makespan);
  }
  for (double ref : {cp_makespan, lower_bound})
    if (ref > 0) {
      lo = std::min(lo, ref);
      hi = std::max(hi, ref);
    }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi <= lo) hi = lo + 1;
  const double pad = 0.05 * (hi - lo);
  lo = std::max(0.0, lo - pad);
  hi += pad;
  double n = 1;
  for (const auto& row : rows) n = std::max(n, static_cast<double>(row.episode));
  auto px = [&](double ep) { return l + (w - l - r) * (std::max(ep, 1.0) - 1) / std::max(1.0, n - 1); };
  auto py = [&](double v) { return t + (h - t - b) * (1 - (v - lo) / (hi - lo)); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
      w, h, l, xml_escape(title));
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", l, h - b, w - r, h - b);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", l, t, l, h - b);
  for (int i = 0; i <= 4; ++i) {
    double v = lo + (hi - lo) * i / 4;
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.4g}</text>\n", l - 6, py(v) + 4, v);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">episode (1..{})</text>\n", (l + w - r) / 2,
                   h - 15, static_cast<long>(n));
  // Phase boundary.
  for (std::size_t i = 1; i < eps.size(); ++i)
    if (eps[i].phase != eps[i - 1].phase)
      s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#999\" "
                       "stroke-dasharray=\"2,3\"/>\n",
                       px(static_cast<double>(eps[i].episode)), t, h - b);
  auto polyline = [&](auto value, const char* color, double width) {
    std::string pts;
    for (const auto& row : eps) pts += fmt::format("{:.1f},{:.1f} ", px(row.episode), py(value(row)));
    return fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" points=\"{}\"/>\n", color,
                       width, pts);
  };
  s += polyline([](const train_row& x) { return x.makespan; }, "#9ecae1", 1);
  s += polyline([](const train_row& x) { return x.best; }, "#08519c", 2);
  for (const auto& e : evals)
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#ff7f0e\"/>\n", px(e.episode),
                     py(e.makespan));
  int legend = 0;
  auto ref_line = [&](double v, const char* color, const std::string& label) {
    if (v <= 0) return;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" "
                     "stroke-dasharray=\"6,4\"/>\n",
                     l, py(v), w - r, py(v), color);
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\" text-anchor=\"end\">{} {:.4g}</text>\n", w - r,
                     t + 14 * ++legend, color, xml_escape(label), v);
  };
  ref_line(cp_makespan, "#d62728", "cp");
  ref_line(lower_bound, "#2ca02c", "lower bound");
  s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#08519c\" text-anchor=\"end\">best so far / episode "
                   "makespan (light)</text>\n",
                   w - r, t + 14 * ++legend);
  if (!evals.empty())
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#ff7f0e\" text-anchor=\"end\">measured greedy placement "
                     "(dots)</text>\n",
                     w - r, t + 14 * ++legend);
  s += "</svg>\n";
  return s;
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomic(path, text);
}

}  // namespace doppler::learner
