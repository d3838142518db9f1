#pragma once
/// The learned placer `doppler`: a trained policy's greedy placement (SEL order + PLC devices)
/// behind the runtime's placer interface. The runtime's registry is Torch-free, so the learner
/// library provides the factory and its users (the CLI, the actors) register or call it.

#include <doppler/learner/policy.hpp>
#include <doppler/runtime/placer.hpp>

#include <memory>
#include <string>

namespace doppler::learner {

/// A placer that loads `checkpoint` (policy::save) once and places greedily; it is named `doppler`,
/// or `doppler-joint` / `doppler-placeto` / `doppler-gdp` for a checkpoint of the single-policy
/// ablation or of the Placeto-like / GDP-like baselines (policy_options::kind). Honors
/// placer_options::respect_memory; `seed` is unused (greedy placement is deterministic).
std::unique_ptr<placer> make_doppler_placer(const std::string& checkpoint);
/// The same placer around a policy already in memory.
std::unique_ptr<placer> make_doppler_placer(policy pol);

}  // namespace doppler::learner

namespace doppler {
using learner::make_doppler_placer;
}  // namespace doppler
