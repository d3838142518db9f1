// The `doppler` placer (doppler_placer.hpp).
#include <doppler/learner/doppler_placer.hpp>

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/sim.hpp>

namespace doppler::learner {

namespace {

class doppler_placer final : public placer {
 public:
  doppler_placer(policy pol, int samples)
      : pol_(std::move(pol)),
        samples_(samples),
        name_(pol_.options().kind != policy_kind::dual ? "doppler-" + policy_kind_name(pol_.options().kind)
              : pol_.options().ablation != policy_ablation::none
                  ? "doppler-" + policy_ablation_name(pol_.options().ablation)
                  : "doppler") {}
  std::string_view name() const noexcept override { return name_; }
  placement place(const graph& g, const cluster& c, const cost_model& cm, const placer_options& opt) override {
    problem pb(g, c, cm, opt.respect_memory);
    pb.with_transfers(opt.sim.transfers);
    if (opt.progress) opt.progress(0.0);
    placement p = pol_.place(pb);
    if (samples_ > 0) {  // best of the greedy placement and `samples_` sampled ones, by the simulator
      sim_options so = opt.sim;
      so.record_trace = false;
      double best = simulate(g, c, p, cm, so).makespan;
      for (int k = 0; k < samples_; ++k) {
        auto ep = pol_.rollout(pb, rollout_options::sample(opt.seed * 1000003ULL + static_cast<std::uint64_t>(k)));
        const double m = simulate(g, c, ep.result, cm, so).makespan;
        if (m < best) {
          best = m;
          p = std::move(ep.result);
        }
        if (opt.progress) opt.progress(static_cast<double>(k + 1) / (samples_ + 1));
      }
    }
    if (opt.progress) opt.progress(1.0);
    p.method = name_;
    return p;
  }

 private:
  policy pol_;
  int samples_ = 0;
  std::string name_;
};

}  // namespace

std::unique_ptr<placer> make_doppler_placer(const std::string& checkpoint, int samples) {
  if (samples < 0) throw error(errc::bad_argument, "doppler placer: samples must be >= 0");
  return std::make_unique<doppler_placer>(policy::load(checkpoint), samples);
}

std::unique_ptr<placer> make_doppler_placer(policy pol, int samples) {
  if (samples < 0) throw error(errc::bad_argument, "doppler placer: samples must be >= 0");
  return std::make_unique<doppler_placer>(std::move(pol), samples);
}

}  // namespace doppler::learner
