// The `doppler` placer (doppler_placer.hpp).
#include <doppler/learner/doppler_placer.hpp>

namespace doppler::learner {

namespace {

class doppler_placer final : public placer {
 public:
  explicit doppler_placer(policy pol)
      : pol_(std::move(pol)),
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
    if (opt.progress) opt.progress(1.0);
    p.method = name_;
    return p;
  }

 private:
  policy pol_;
  std::string name_;
};

}  // namespace

std::unique_ptr<placer> make_doppler_placer(const std::string& checkpoint) {
  return std::make_unique<doppler_placer>(policy::load(checkpoint));
}

std::unique_ptr<placer> make_doppler_placer(policy pol) {
  return std::make_unique<doppler_placer>(std::move(pol));
}

}  // namespace doppler::learner
