// The assignment episode (env.hpp).
#include <doppler/learner/env.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/tolerance.hpp>

#include "placer_arrivals.hpp"  // runtime/src: the planned-aware arrival estimate cp and heft use

#include <algorithm>
#include <cmath>
#include <limits>

namespace doppler::learner {

assignment_env::~assignment_env() = default;

assignment_env::assignment_env(const graph& g, const cluster& c, const cost_model& cm,
                               const graph_features& f, bool respect_memory, transfer_planner* transfers,
                               const placement* teacher, const placement* hint,
                               const op_symmetry* teacher_symmetry)
    : g_(g), c_(c), cm_(cm), f_(f), respect_memory_(respect_memory), teacher_(teacher), hint_(hint) {
  if (transfers) arrivals_ = std::make_unique<detail::arrival_estimator>(g, c, transfers);
  const std::size_t n = g.size(), n_dev = c.device_count();
  if (f.ops != n) throw error(errc::bad_argument, "learner: features were computed for another graph");
  // The bounds this class indexes by (problem::with_teacher / with_hint run check_placement once).
  auto check = [&](const placement& p, const char* what) {
    if (p.device.size() != n || (!p.order.empty() && p.order.size() != n))
      throw error(errc::bad_argument, std::string("learner: the ") + what + " placement places " +
                                          std::to_string(p.device.size()) + " ops; the graph has " + std::to_string(n));
    for (device_index d : p.device)
      if (d >= n_dev) throw error(errc::bad_argument, std::string("learner: the ") + what + " placement uses device " + std::to_string(d));
    for (op_index v : p.order)
      if (v >= n) throw error(errc::bad_argument, std::string("learner: the ") + what + " placement's order names op " + std::to_string(v));
  };
  if (hint) {
    check(*hint, "hint");
    hint_match_.image.assign(n_dev, -1);
    hint_match_.preimage.assign(n_dev, -1);
    hint_work_.assign(n_dev * n_dev, 0.0);
  }
  if (teacher) {
    check(*teacher, "teacher");
    teacher_match_.image.assign(n_dev, -1);
    teacher_match_.preimage.assign(n_dev, -1);
    teacher_done_.assign(n, 0);
    if (teacher_symmetry) {
      if (teacher_symmetry->part.size() != n || teacher_symmetry->pos.size() != n ||
          teacher_symmetry->edges != g.edge_count())
        throw error(errc::bad_argument, "learner: the teacher's symmetry was computed for another graph");
      sym_ = teacher_symmetry;
      part_image_.assign(sym_->part_ops.size(), -1);
      part_preimage_.assign(sym_->part_ops.size(), -1);
    }
    if (!teacher->order.empty()) {
      teacher_rank_.resize(n);
      teacher_queue_.resize(n_dev);
      teacher_next_.assign(n_dev, 0);
      for (std::size_t i = 0; i < teacher->order.size(); ++i) {
        const op_index v = teacher->order[i];
        teacher_rank_[v] = static_cast<std::uint32_t>(i);
        teacher_queue_[teacher->device[v]].push_back(v);
      }
    }
  }
  missing_.resize(n);
  start_.assign(n, 0.0);
  end_.assign(n, 0.0);
  avail_.assign(n_dev, 0.0);
  load_.assign(n_dev, 0.0);
  mem_used_.assign(n_dev, 0.0);
  est_.assign(n_dev, 0.0);
  fits_.assign(n_dev, 1);
  for (op_index v = 0; v < n; ++v) {
    missing_[v] = static_cast<std::uint32_t>(g.preds(v).size());
    if (missing_[v] == 0) ready_.push_back(v);
  }
  p_.device.assign(n, 0);
  assigned_.assign(n, 0);
  sibling_.assign(n_dev, 0.0);
  p_.order.reserve(n);
  p_.method = "doppler";
}

void assignment_env::compute_est(op_index v) {
  const auto n_dev = static_cast<device_index>(c_.device_count());
  for (device_index d = 0; d < n_dev; ++d) {
    fits_[d] = fits(v, d);
    double t = avail_[d];
    for (op_index u : g_.preds(v)) {
      device_index du = p_.device[u];
      if (du == d) t = std::max(t, end_[u]);
      else if (arrivals_) t = std::max(t, arrivals_->arrival(u, du, end_[u], d));
      else t = std::max(t, end_[u] + cm_.transfer_time(c_, du, d, g_[u].bytes));
    }
    est_[d] = t;
  }
  est_op_ = v;
}

bool assignment_env::fits(op_index v, device_index d) const {
  return !respect_memory_ || mem_used_[d] + g_[v].bytes <= c_[d].memory;
}

double assignment_env::min_fitting_est() const {
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t d = 0; d < est_.size(); ++d)
    if (fits_[d]) best = std::min(best, est_[d]);
  return best;
}

double assignment_env::best_est(op_index v) {
  compute_est(v);
  const double best = min_fitting_est();
  return std::isfinite(best) ? best : *std::min_element(est_.begin(), est_.end());
}

void assignment_env::sel_features(std::span<float> out) {
  constexpr int nf = sel_feature_count;
  const std::size_t r = ready_.size();
  if (out.size() < r * nf) throw error(errc::bad_argument, "learner: SEL feature buffer too small");
  const op_index last = p_.order.empty() ? static_cast<op_index>(-1) : p_.order.back();
  sel_times_.resize(2 * r);  // per ready op: best EST, latest producer end
  // An op without producers (a weight: wide graphs have thousands ready at once) starts on d when
  // d is free: its best EST is the first device it fits on in order of availability.
  const auto n_dev = static_cast<device_index>(c_.device_count());
  by_avail_.resize(n_dev);
  for (device_index d = 0; d < n_dev; ++d) by_avail_[d] = d;
  std::stable_sort(by_avail_.begin(), by_avail_.end(), [&](device_index a, device_index b) { return avail_[a] < avail_[b]; });
  auto entry_est = [&](op_index v) {
    for (device_index d : by_avail_)
      if (fits(v, d)) return avail_[d];
    return avail_[by_avail_.front()];  // fits nowhere: over all devices, as best_est
  };
  double min_est = std::numeric_limits<double>::infinity(), min_data = min_est;
  for (std::size_t i = 0; i < r; ++i) {
    const op_index v = ready_[i];
    double data = 0;
    bool follows = false;
    for (op_index u : g_.preds(v)) {
      data = std::max(data, end_[u]);
      follows = follows || u == last;
    }
    sel_times_[2 * i] = g_.preds(v).empty() ? entry_est(v) : best_est(v);
    sel_times_[2 * i + 1] = data;
    min_est = std::min(min_est, sel_times_[2 * i]);
    min_data = std::min(min_data, data);
    out[i * nf + static_cast<int>(sel_feature::follows_last)] = follows ? 1.0f : 0.0f;
  }
  const double s = 1.0 / f_.time_scale;
  for (std::size_t i = 0; i < r; ++i) {
    out[i * nf + static_cast<int>(sel_feature::est_lag)] = static_cast<float>((sel_times_[2 * i] - min_est) * s);
    out[i * nf + static_cast<int>(sel_feature::ready_lag)] = static_cast<float>((sel_times_[2 * i + 1] - min_data) * s);
  }
}

std::size_t assignment_env::device_features(op_index v, std::span<float> out,
                                            std::span<std::uint8_t> valid) {
  const auto n_dev = static_cast<device_index>(c_.device_count());
  constexpr int nf = device_feature_count;
  if (out.size() < n_dev * nf || valid.size() < n_dev)
    throw error(errc::bad_argument, "learner: device feature buffer too small");
  compute_est(v);
  const double best = min_fitting_est();
  const auto n_valid = static_cast<std::size_t>(std::count(fits_.begin(), fits_.end(), std::uint8_t{1}));
  const double s = 1.0 / f_.time_scale;
  std::fill(sibling_.begin(), sibling_.end(), 0.0);
  for (op_index x : g_.succs(v))
    for (op_index u : g_.preds(x))
      if (u != v && assigned_[u]) sibling_[p_.device[u]] += f_.node_cost[u];
  for (device_index d = 0; d < n_dev; ++d) {
    double pred_compute = 0, first = std::numeric_limits<double>::infinity(), last = 0;
    bool any = false;
    for (op_index u : g_.preds(v))
      if (p_.device[u] == d) {
        any = true;
        pred_compute += f_.node_cost[u];
        first = std::min(first, start_[u]);
        last = std::max(last, end_[u]);
      }
    float* o = &out[d * nf];
    o[static_cast<int>(device_feature::load)] = static_cast<float>(load_[d] * s);
    o[static_cast<int>(device_feature::pred_compute)] = static_cast<float>(pred_compute * s);
    o[static_cast<int>(device_feature::pred_start)] = any ? static_cast<float>(first * s) : 0.0f;
    o[static_cast<int>(device_feature::pred_end)] = any ? static_cast<float>(last * s) : 0.0f;
    o[static_cast<int>(device_feature::est)] = static_cast<float>(est_[d] * s);
    o[static_cast<int>(device_feature::est_gap)] =
        fits_[d] && n_valid ? static_cast<float>((est_[d] - best) * s) : 0.0f;
    std::size_t smaller = 0;
    for (device_index k = 0; k < n_dev; ++k)
      if (fits_[k] && clearly_less(est_[k], est_[d])) ++smaller;
    o[static_cast<int>(device_feature::est_rank)] =
        fits_[d] && n_valid ? static_cast<float>(smaller) / static_cast<float>(n_valid) : 0.0f;
    float same_work = 0, matched = 0;
    if (hint_) {
      const device_index t = hint_->device[v];
      same_work = static_cast<float>(hint_work_[t * n_dev + d] * s);
      const int img = hint_match_.image[t];
      const bool free = img < 0 && hint_match_.preimage[d] < 0 && interchangeable(t, d);
      matched = img == static_cast<int>(d) ? 1.0f : free && d == t ? 0.5f : free ? 0.25f : 0.0f;
    }
    o[static_cast<int>(device_feature::hint_same)] = same_work;
    o[static_cast<int>(device_feature::hint_match)] = matched;
    o[static_cast<int>(device_feature::sibling_work)] = static_cast<float>(sibling_[d] * s);
    valid[d] = fits_[d];
  }
  return n_valid;
}

void assignment_env::teacher_ops(std::vector<op_index>& out) const {
  out.clear();
  if (!teacher_rank_.empty()) {  // the teacher placement's order, per device
    op_index first = ready_.front();
    std::uint32_t first_rank = std::numeric_limits<std::uint32_t>::max();
    for (op_index v : ready_) {
      stand_ins(v, stand_in_buf_);
      bool next = false;
      for (auto [w, b] : stand_in_buf_) {
        if (teacher_rank_[w] < first_rank) {
          first_rank = teacher_rank_[w];
          first = v;
        }
        next = next || next_in_order(w);
      }
      if (next) out.push_back(v);
    }
    if (out.empty()) out.push_back(first);
    return;
  }
  cp_ops(out);
}

void assignment_env::cp_ops(std::vector<op_index>& out) const {
  out.clear();
  double top = -1;
  for (op_index v : ready_) top = std::max(top, f_.bottom_level[v]);
  for (op_index v : ready_)
    if (nearly_equal(f_.bottom_level[v], top)) out.push_back(v);
}

void assignment_env::teacher_devices(op_index v, std::vector<device_index>& out) const {
  out.clear();
  if (est_op_ != v) throw error(errc::internal, "learner: teacher_devices before device_features");
  if (teacher_) {
    stand_ins(v, stand_in_buf_);
    for (auto [w, b] : stand_in_buf_) devices_for(teacher_->device[w], out);
    if (!out.empty()) return;
  }
  cp_devices(v, out);
}

void assignment_env::cp_devices(op_index v, std::vector<device_index>& out) const {
  out.clear();
  if (est_op_ != v) throw error(errc::internal, "learner: cp_devices before device_features");
  const double best = min_fitting_est();
  for (device_index d = 0; d < est_.size(); ++d)
    if (fits_[d] && nearly_equal(est_[d], best)) out.push_back(d);
}

void assignment_env::devices_for(device_index t, std::vector<device_index>& out) const {
  auto add = [&](device_index d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  const auto& m = teacher_match_;
  if (m.image[t] >= 0) {
    if (fits_[m.image[t]]) add(static_cast<device_index>(m.image[t]));
  } else if (m.preimage[t] < 0 && fits_[t]) {  // t itself while it is free: no relabelling
    add(t);
  } else {
    for (device_index d = 0; d < est_.size(); ++d)
      if (fits_[d] && m.preimage[d] < 0 && interchangeable(t, d)) add(d);
  }
}

void assignment_env::stand_ins(op_index v, std::vector<std::pair<op_index, int>>& out) const {
  out.clear();
  const int a = sym_ ? sym_->part[v] : -1;
  if (a < 0) {
    out.emplace_back(v, -1);
  } else if (part_image_[a] >= 0) {
    out.emplace_back(sym_->counterpart(v, part_image_[a]), part_image_[a]);
  } else {
    for (int b = 0; b < static_cast<int>(sym_->part_ops.size()); ++b)
      if (sym_->part_kind[b] == sym_->part_kind[a] && part_preimage_[b] < 0)
        out.emplace_back(sym_->counterpart(v, b), b);
  }
}

bool assignment_env::next_in_order(op_index w) const {
  const auto t = teacher_->device[w];
  const auto& q = teacher_queue_[t];
  return teacher_next_[t] < q.size() && q[teacher_next_[t]] == w;
}

bool assignment_env::interchangeable(device_index a, device_index b) const {
  return c_[a].kind == c_[b].kind && c_[a].flops == c_[b].flops && c_[a].memory == c_[b].memory;
}

void assignment_env::match(matching& m, device_index t, device_index d) const {
  if (m.image[t] < 0 && m.preimage[d] < 0 && interchangeable(t, d)) {
    m.image[t] = static_cast<int>(d);
    m.preimage[d] = static_cast<int>(t);
  }
}

void assignment_env::assign(op_index v, device_index d) {
  auto it = std::lower_bound(ready_.begin(), ready_.end(), v);
  if (it == ready_.end() || *it != v)
    throw error(errc::bad_argument, "learner: op " + g_[v].id + " is not ready");
  if (d >= c_.device_count()) throw error(errc::bad_argument, "learner: no device " + std::to_string(d));
  if (est_op_ != v) compute_est(v);
  if (!fits_[d]) {
    bool any = std::any_of(fits_.begin(), fits_.end(), [](std::uint8_t x) { return x != 0; });
    throw error(any ? errc::bad_argument : errc::infeasible,
                "learner: op " + g_[v].id + " does not fit on device " + c_[d].id);
  }
  ready_.erase(it);
  assigned_[v] = 1;
  if (teacher_) {
    const int a = sym_ ? sym_->part[v] : -1;
    if (a >= 0 && part_image_[a] < 0) {  // the part's first op: match it to a teacher part (env.hpp)
      stand_ins(v, stand_in_buf_);
      int best = -1, best_score = -1;
      std::uint32_t best_rank = std::numeric_limits<std::uint32_t>::max();
      std::vector<device_index> devs;
      const bool ordered = !teacher_rank_.empty();
      for (auto [w, b] : stand_in_buf_) {
        devs.clear();
        devices_for(teacher_->device[w], devs);
        const bool on_d = std::find(devs.begin(), devs.end(), d) != devs.end();
        const int score = 2 * on_d + 2 * (ordered && next_in_order(w)) + (b == a);  // then itself
        const std::uint32_t rank = ordered ? teacher_rank_[w] : static_cast<std::uint32_t>(b);
        if (score > best_score || (score == best_score && rank < best_rank)) {
          best = b;
          best_score = score;
          best_rank = rank;
        }
      }
      part_image_[a] = best;
      part_preimage_[best] = a;
    }
    const op_index w = a >= 0 ? sym_->counterpart(v, part_image_[a]) : v;  // the teacher op v stands for
    const device_index t = teacher_->device[w];
    teacher_done_[w] = 1;
    if (!teacher_rank_.empty()) {
      auto& q = teacher_queue_[t];
      while (teacher_next_[t] < q.size() && teacher_done_[q[teacher_next_[t]]]) ++teacher_next_[t];
    }
    match(teacher_match_, t, d);  // the first op of an unmatched teacher device on an unmatched device
  }
  if (hint_) {
    const device_index t = hint_->device[v];
    match(hint_match_, t, d);
    hint_work_[t * c_.device_count() + d] += f_.node_cost[v];
  }
  if (arrivals_)
    for (op_index u : g_.preds(v))
      if (p_.device[u] != d) arrivals_->commit(u, p_.device[u], d);
  start_[v] = est_[d];
  end_[v] = est_[d] + cm_.op_time(g_[v], c_[d]);
  avail_[d] = end_[v];
  load_[d] += f_.node_cost[v];
  mem_used_[d] += g_[v].bytes;
  schedule_end_ = std::max(schedule_end_, end_[v]);
  p_.device[v] = d;
  p_.order.push_back(v);
  ++steps_;
  est_op_ = static_cast<op_index>(-1);
  for (op_index s : g_.succs(v))
    if (--missing_[s] == 0) ready_.insert(std::lower_bound(ready_.begin(), ready_.end(), s), s);
}

}  // namespace doppler::learner
