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
/// placer_options::respect_memory; `seed` only seeds the samples below.
/// With `samples` > 0 the placer also draws that many sampled placements (temperature 1, seeds
/// from placer_options::seed), scores each and the greedy one with the simulator
/// (placer_options::sim), and returns the best — best-of-K sampling at deployment, K simulations.
std::unique_ptr<placer> make_doppler_placer(const std::string& checkpoint, int samples = 0);
/// The same placer around a policy already in memory.
std::unique_ptr<placer> make_doppler_placer(policy pol, int samples = 0);

}  // namespace doppler::learner

namespace doppler {
using learner::make_doppler_placer;
}  // namespace doppler
