#pragma once
// The policy network in LibTorch (internal: only learner/src includes Torch).
//
//   encoder: h0 = relu(W_in x); for k in steps: m = mean over incoming edges of Θ(e)·h_src + W_root h,
//            h = GRU(relu(m), h)          (Θ(e) = MLP(edge features) reshaped to hidden × hidden)
//   SEL:     logit(v) = MLP([relu(P x_v) ‖ h_v ‖ Σ h on v's longest path to an exit / L ‖
//                            Σ h on v's longest path from an entry / L])
//            dynamic_sel: logit(v, t) = w · relu(W1 [the same input] + W_s s_{v,t} + b) + c, with
//            s_{v,t} the ready op's sel_feature columns at step t (W1 [..] once per episode)
//   PLC:     logit(v, d) = w · relu(W_dev relu(P_dev f_vd) + W_op [relu(P_op x_v) ‖ h_v] + b
//                                   + W_sum Σ_{u on d} h_u / |V|) + c
//   joint (the single-policy ablation): logit(v, d) = PLC's logit above for every ready v, one
//            softmax over all (ready op, valid device) pairs; no SEL head.
// The first PLC layer is split by input block so the per-op and per-device-sum terms are computed
// once per episode; only the device-feature term is per step.

#include <doppler/learner/features.hpp>
#include <doppler/learner/policy.hpp>

#include <torch/torch.h>

#include <span>

namespace doppler::learner::detail {

/// A problem's static tensors.
/// Messages are ordered by edge type (distinct edge-feature rows): Θ is computed once per type and
/// each type's messages are one matrix product (O(E·h²) per step, not O(E·32·h²) to build Θ per
/// edge). Longest-path sums use pointer jumping: O(N log L) instead of a dense path list O(N·L).
struct graph_tensors {
  torch::Tensor x;          ///< [N, node_feature_count] z-scored features
  torch::Tensor edge_types; ///< [U, edge_feature_count]: the distinct edge features
  torch::Tensor edge_type;  ///< [E] long: each message's type (messages sorted by type)
  std::vector<std::int64_t> type_off;  ///< messages of type u are [type_off[u], type_off[u+1])
  torch::Tensor src;        ///< [E] long: message source
  torch::Tensor agg;        ///< sparse [N, E]: mean over incoming messages
  /// Pointer-jumping tables over N+1 rows (row N: a zero sentinel): jump k maps v to the op 2^k
  /// steps further along v's longest path down (to an exit) / up (from an entry).
  std::vector<torch::Tensor> down_jump, up_jump;
  float path_scale = 1;     ///< 1 / max_path_ops
  torch::Tensor nbr_mean;   ///< sparse [N, N]: mean over bidirectional neighbours (the baselines' SAGE)
  /// Hinted dual policies: [N, 1], v's position in the hint placement's order / (N − 1) (0 without
  /// an order) — SEL's extra input, a static priority that reproduces the hint's order. Else undefined.
  torch::Tensor hint_rank;
};
graph_tensors make_graph_tensors(const graph_features& f);

/// The encoder's per-episode outputs.
struct encoded {
  torch::Tensor sel_logits;  ///< [N] (dynamic_sel: the active-search offsets only, zeros without)
  /// dynamic_sel: [N, mlp], SEL's first layer over its static input before the activation (its
  /// bias included); the per-step term is added to it. Undefined otherwise.
  torch::Tensor sel_hidden;
  torch::Tensor op_part;     ///< [N, mlp]: W_op [relu(P_op x) ‖ h] + b
  torch::Tensor sum_part;    ///< [N, mlp]: W_sum h / |V|
  torch::Tensor plc_bias;    ///< [N, D] instance-specific PLC logit offsets (active search), or undefined
};

/// An episode as tensors for the batched recomputation.
struct episode_tensors {
  torch::Tensor ready_mask;   ///< [T, N] bool
  torch::Tensor ops, devs;    ///< [T] long
  torch::Tensor dev_feat;     ///< [T, D, device_feature_count]
  torch::Tensor dev_valid;    ///< [T, D] bool
  torch::Tensor teacher_ops;  ///< [T, N] bool (undefined without labels)
  torch::Tensor teacher_devs; ///< [T, D] bool (undefined without labels)
  // An episode recorded with dynamic SEL (undefined otherwise): every ready entry k of every step,
  // and the entries whose features are not all 0.
  torch::Tensor ready_op, ready_step;  ///< [K] long
  torch::Tensor sel_rows;     ///< [R] long into K
  torch::Tensor sel_feat;     ///< [R, sel_feature_count]
  // joint policy: every ready entry k of every step, padded per step to R = max ready size.
  torch::Tensor pair_feat;    ///< [K, D, device_feature_count]
  torch::Tensor pair_valid;   ///< [K, D] bool
  torch::Tensor pair_op, pair_step;  ///< [K] long
  torch::Tensor pad_idx;      ///< [T, R] long into K (K = a padding row)
  torch::Tensor pad_mask;     ///< [T, R·D] bool: valid pairs
  torch::Tensor pair_taken;   ///< [T] long: r·D + d of the chosen pair
  torch::Tensor teacher_pairs;///< [T, R·D] bool (undefined without labels)
};
episode_tensors make_episode_tensors(const episode& ep, std::size_t n_ops, std::size_t n_dev);

/// Per-step log-probabilities and entropies of one episode.
struct step_terms {
  torch::Tensor sel_lp, plc_lp;    ///< [T, N], [T, D]: log π, 0 where masked
  torch::Tensor sel_taken, plc_taken;  ///< [T]: log π of the chosen actions
  torch::Tensor sel_ent, plc_ent;  ///< [T]
};

/// Masked log-softmax along dim 1 with 0 where masked, and the entropy per row.
std::pair<torch::Tensor, torch::Tensor> masked_log_softmax(const torch::Tensor& logits, const torch::Tensor& mask);

/// Placeto's per-step state for steps [t0, t1) of an episode visiting `order` (baseline_net.cpp):
/// every op's current device (visited ops: their new device, others the initial round-robin one)
/// and its [visited, is current] flags.
struct placeto_state {
  torch::Tensor dev;    ///< [N, S] long
  torch::Tensor flags;  ///< [N, S, 2]
  torch::Tensor ops;    ///< [S] long: the visited op of each step
};
/// The initial placement of a Placeto episode: op v on device v mod n_dev.
inline std::size_t placeto_initial_device(std::size_t v, std::size_t n_dev) { return v % n_dev; }
placeto_state make_placeto_state(std::span<const op_index> order, std::span<const device_index> device,
                                 std::size_t n_dev, std::size_t t0, std::size_t t1);

/// The Placeto-like and GDP-like baselines' network (baseline_net.cpp):
///   h0 = relu(W_in x_v (+ E_in[current device of v], placeto)); gdp's x_v ends with position features,
///   K GraphSAGE layers h = relu(W_self h + W_nbr mean_{u ~ v} h_u) over the bidirectional graph;
///   gdp:     h = LayerNorm(h + W_o softmax(Q Kᵀ / √H) V) (one self-attention layer over all ops),
///            r = relu(W_h h), logit(v, d) = (r_v − mean_u r_u) · E_out[d] / √m   (all ops, one pass)
///   placeto: x_v = [static features, visited, is current], re-run at every step;
///            logit(v_t, d) = w · relu(W_h h_v + W_g mean_u h_u + W_p Σ_{u on d} h_u / N + E_out[d]) + c
/// GDP's input columns after the static features: sin/cos of the op index at 4 frequencies.
inline constexpr int gdp_position_features = 8;

struct baseline_net_impl : torch::nn::Module {
  explicit baseline_net_impl(const policy_options& o);
  /// gdp: device logits of every op [N, D].
  torch::Tensor gdp_logits(const graph_tensors& gt, std::size_t n_dev);
  /// placeto: device logits of the visited op of each step in `st` [S, D].
  torch::Tensor placeto_logits(const graph_tensors& gt, const placeto_state& st, std::size_t n_dev);

  policy_options opt;
  torch::nn::Linear in{nullptr};
  torch::nn::Embedding dev_in{nullptr}, dev_out{nullptr};
  std::vector<torch::nn::Linear> sage_self, sage_nbr;
  torch::nn::Linear att_q{nullptr}, att_k{nullptr}, att_v{nullptr}, att_o{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear w_h{nullptr}, w_g{nullptr}, w_p{nullptr}, out{nullptr};

 private:
  torch::Tensor sage(const graph_tensors& gt, torch::Tensor h);
};
TORCH_MODULE_IMPL(baseline_net, baseline_net_impl);

struct net_impl : torch::nn::Module {
  explicit net_impl(const policy_options& o);

  encoded encode(const graph_tensors& gt, std::size_t n_ops);
  /// PLC logits [T, D] for the steps of an episode.
  torch::Tensor plc_logits(const encoded& e, const episode_tensors& et);
  /// The device-feature columns the network reads ([.., .., device_feature_count] → [.., .., device_inputs]).
  torch::Tensor read_columns(const torch::Tensor& feat) const;
  /// joint: log π over the padded pairs [T, R·D] (0 where masked) and the entropy per step [T].
  std::pair<torch::Tensor, torch::Tensor> joint_log_probs(const encoded& e, const episode_tensors& et, double tau);
  /// SEL and PLC terms of an episode at temperature `tau` (joint: the pair terms in sel_*, zeros
  /// [T, D] / [T] in plc_*).
  step_terms terms(const encoded& e, const episode_tensors& et, double tau);

  policy_options opt;
  torch::nn::Linear in{nullptr}, edge1{nullptr}, edge2{nullptr}, root{nullptr};
  torch::nn::GRUCell gru{nullptr};
  /// Σ of h over v's path (v included) via pointer jumping, times path_scale: [N, h].
  torch::Tensor path_sum(const torch::Tensor& hs, const std::vector<torch::Tensor>& jump, float scale);
  torch::nn::Linear sel_proj{nullptr}, sel1{nullptr}, sel2{nullptr};
  torch::nn::Linear sel_dyn{nullptr};  ///< dynamic_sel only: W_s, no bias
  /// SEL's logits [T, N] for the steps of an episode (0 where not ready; the caller masks).
  torch::Tensor sel_step_logits(const encoded& e, const episode_tensors& et);
  torch::nn::Linear plc_dev{nullptr}, plc_op{nullptr}, plc_w_dev{nullptr}, plc_w_op{nullptr},
      plc_w_sum{nullptr}, plc_out{nullptr};
  /// placeto / gdp only (then none of the modules above exist).
  baseline_net baseline{nullptr};
};
TORCH_MODULE_IMPL(net, net_impl);

}  // namespace doppler::learner::detail
