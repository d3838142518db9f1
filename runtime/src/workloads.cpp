// Workload generators (docs/workloads.md has the pictures, op-count and FLOP formulas).
//
// Conventions shared by every generator:
// - `T = batch · seq` tokens; llama graphs keep activations as [batch, seq, dim] (attention must not
//   mix sequences), ffnn and moe-layer fold batch into rows: [T, dim].
// - A piece that would be an identity (a reduce_sum of one partial, a concat of one block) is left
//   out, so `shards = 1` gives the plain unsharded model.
// - Ids read like paths: `l3.s1.q` is layer 3, shard 1, the Q projection.
// - `graph_builder::add` returns a reference into its spec vector that the next add invalidates:
//   every id kept across adds is copied into a std::string here.

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/workloads.hpp>

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

namespace doppler {

workload_params workload_params::llama_7b() {
  workload_params p;
  p.dim = 4096;
  p.heads = 32;
  p.ffn = 11008;
  p.seq = 2048;
  p.batch = 1;
  return p;
}

namespace {

using ids = std::vector<std::string>;

/// Largest accepted value of any parameter, and largest graph a generator will build.
constexpr std::int64_t max_param = std::int64_t{1} << 20;
constexpr double max_ops = double(1 << 22);

[[noreturn]] void bad(const std::string& why) { throw error(errc::bad_argument, why); }

void positive(std::string_view name, std::int64_t v) {
  if (v <= 0) bad(fmt::format("workload parameter `{}` must be positive, got {}", name, v));
  if (v > max_param)
    bad(fmt::format("workload parameter `{}` must be at most {}, got {}", name, max_param, v));
}

struct named {
  std::string_view name;
  std::int64_t value;
};

void positive(std::initializer_list<named> params) {
  for (const auto& n : params) positive(n.name, n.value);
}

void divisible(std::string_view what, std::int64_t a, std::string_view by, std::int64_t b) {
  if (a % b != 0) bad(fmt::format("`{}` ({}) must be divisible by `{}` ({})", what, a, by, b));
}

double ind(bool c) { return c ? 1.0 : 0.0; }

/// Closed-form op counts (docs/workloads.md); used to refuse oversized graphs before building.
double chainmm_ops(const workload_params& p) {
  double n = double(p.layers) * double(p.matrices), s = double(p.shards);
  return p.shards == 1 ? 2 * n - 1 : n * s + (n - 1) * (2 * s * s + s) + 1;
}
double ffnn_ops(const workload_params& p) {
  double s = double(p.shards);
  return 1 + double(p.layers) * (5 * s + ind(p.shards > 1));
}
double attention_ops(const workload_params& p) {  // one block, the shared input x excluded
  double s = double(p.shards), hs = double(p.heads / p.shards);
  return 3 + ind(p.shards > 1) + s * (15 + ind(hs > 1) * (4 * hs + 4));
}
double swiglu_ops(const workload_params& p) {
  return 3 + 8 * double(p.shards) + ind(p.shards > 1);
}
double moe_ops(const workload_params& p) {
  double e = double(p.experts), k = double(p.top_k);
  return 1 + double(p.layers) * (7 + 13 * e + ind(p.experts > 1) + ind(p.top_k > 1) * (k + 3));
}

void check_size(double n) {
  if (n > max_ops)
    bad(fmt::format("the workload would have {:.0f} ops, more than the limit {:.0f}; lower `layers`, "
                    "`shards`, `heads`, `experts` or `matrices`", n, max_ops));
}

// ---- chainmm ------------------------------------------------------------------------------------

graph chainmm(const workload_params& p) {
  positive("dim", p.dim);
  positive("shards", p.shards);
  positive("layers", p.layers);
  positive("matrices", p.matrices);
  if (p.layers * p.matrices < 2)
    bad("chainmm needs at least 2 matrices in the chain (`matrices` × `layers`)");
  divisible("dim", p.dim, "shards", p.shards);
  check_size(chainmm_ops(p));

  graph_builder b("chainmm", p.type);
  b.reserve(static_cast<std::size_t>(chainmm_ops(p)));
  const std::int64_t n = p.layers * p.matrices, s = p.shards, d = p.dim, bs = p.dim / p.shards;
  if (s == 1) {
    std::string acc = b.input("m0", {d, d});
    for (std::int64_t j = 1; j < n; ++j) {
      std::string m = b.input(fmt::format("m{}", j), {d, d});
      acc = b.matmul(fmt::format("p{}", j), acc, m);
    }
    return std::move(b).build();
  }
  // The running product is held as s row blocks R_i [d/s, d]. Multiplying by M_j (given as s row
  // blocks K_t [d/s, d], i.e. blocks of the contraction axis) is an s × s grid of block matmuls:
  // R_i · M_j = Σ_t R_i[:, t-th column block] · K_t, summed by one reduce_sum per row block.
  ids rows(static_cast<std::size_t>(s));
  for (std::int64_t i = 0; i < s; ++i) rows[std::size_t(i)] = b.input(fmt::format("m0.r{}", i), {bs, d});
  ids blocks(static_cast<std::size_t>(s)), partial(static_cast<std::size_t>(s));
  for (std::int64_t j = 1; j < n; ++j) {
    for (std::int64_t t = 0; t < s; ++t)
      blocks[std::size_t(t)] = b.input(fmt::format("m{}.k{}", j, t), {bs, d});
    ids next(static_cast<std::size_t>(s));
    for (std::int64_t i = 0; i < s; ++i) {
      for (std::int64_t t = 0; t < s; ++t) {
        std::string a = b.slice(fmt::format("p{}.r{}.k{}.a", j, i, t), rows[std::size_t(i)], 1,
                                t * bs, (t + 1) * bs);
        partial[std::size_t(t)] = b.matmul(fmt::format("p{}.r{}.k{}", j, i, t), a, blocks[std::size_t(t)]);
      }
      next[std::size_t(i)] = b.reduce_sum(fmt::format("p{}.r{}", j, i), partial);
    }
    rows = std::move(next);
  }
  b.concat("out", rows, 0);
  return std::move(b).build();
}

// ---- ffnn ---------------------------------------------------------------------------------------

graph ffnn(const workload_params& p) {
  positive({{"dim", p.dim}, {"ffn", p.ffn}, {"seq", p.seq}, {"batch", p.batch},
            {"shards", p.shards}, {"layers", p.layers}});
  divisible("ffn", p.ffn, "shards", p.shards);
  check_size(ffnn_ops(p));

  graph_builder b("ffnn", p.type);
  b.reserve(static_cast<std::size_t>(ffnn_ops(p)));
  const std::int64_t s = p.shards, fs = p.ffn / p.shards;
  std::string x = b.input("x", {p.batch * p.seq, p.dim});
  ids partial(static_cast<std::size_t>(s));
  for (std::int64_t l = 0; l < p.layers; ++l) {
    const op_kind act = l % 2 == 0 ? op_kind::gelu : op_kind::silu;
    for (std::int64_t i = 0; i < s; ++i) {
      // Column-parallel W1 (the ffn axis split), row-parallel W2 (the contraction axis split).
      std::string pre = fmt::format("l{}.s{}", l, i);
      std::string w1 = b.input(pre + ".w1", {p.dim, fs});
      std::string h = b.matmul(pre + ".h", x, w1);
      std::string a = b.unary(act, pre + ".act", h);
      std::string w2 = b.input(pre + ".w2", {fs, p.dim});
      partial[std::size_t(i)] = b.matmul(pre + ".y", a, w2);
    }
    x = s == 1 ? partial[0] : b.reduce_sum(fmt::format("l{}.sum", l), partial);
  }
  return std::move(b).build();
}

// ---- llama --------------------------------------------------------------------------------------

void check_llama(const workload_params& p, bool layer) {
  positive({{"dim", p.dim}, {"heads", p.heads}, {"seq", p.seq},
            {"batch", p.batch}, {"shards", p.shards}});
  if (layer) {
    positive("ffn", p.ffn);
    positive("layers", p.layers);
  }
  divisible("dim", p.dim, "heads", p.heads);
  if ((p.dim / p.heads) % 2 != 0)
    bad(fmt::format("head dimension `dim`/`heads` ({}) must be even for rope", p.dim / p.heads));
  divisible("heads", p.heads, "shards", p.shards);
  if (layer) divisible("ffn", p.ffn, "shards", p.shards);
}

/// Splits t [b, S, hs·hd] into its hs heads and stacks them on the leading axis: [hs·b, S, hd].
std::string fold_heads(graph_builder& b, const std::string& t, std::int64_t hs, std::int64_t hd) {
  if (hs == 1) return t;
  ids heads(static_cast<std::size_t>(hs));
  for (std::int64_t h = 0; h < hs; ++h)
    heads[std::size_t(h)] = b.slice(fmt::format("{}.h{}", t, h), t, 2, h * hd, (h + 1) * hd);
  return b.concat(t + "g", heads, 0);
}

/// Pre-norm attention block of layer l on x [b, S, dim]; returns the residual output's id.
std::string attention(graph_builder& b, const workload_params& p, std::int64_t l, const std::string& x) {
  const std::int64_t s = p.shards, hs = p.heads / p.shards, hd = p.dim / p.heads, B = p.batch;
  const std::string lp = fmt::format("l{}", l);
  std::string nw = b.input(lp + ".attn.norm.w", {p.dim});
  std::string xn = b.binary(op_kind::rmsnorm, lp + ".attn.norm", x, nw);
  ids partial(static_cast<std::size_t>(s));
  for (std::int64_t i = 0; i < s; ++i) {
    const std::string sp = fmt::format("{}.s{}", lp, i);
    std::string wq = b.input(sp + ".wq", {p.dim, hs * hd});
    std::string wk = b.input(sp + ".wk", {p.dim, hs * hd});
    std::string wv = b.input(sp + ".wv", {p.dim, hs * hd});
    std::string wo = b.input(sp + ".wo", {hs * hd, p.dim});
    std::string q = b.matmul(sp + ".q", xn, wq);  // [b, S, hs·hd]
    std::string k = b.matmul(sp + ".k", xn, wk);
    std::string v = b.matmul(sp + ".v", xn, wv);
    q = fold_heads(b, q, hs, hd);  // [hs·b, S, hd]: one attention batch for the shard's heads
    k = fold_heads(b, k, hs, hd);
    v = fold_heads(b, v, hs, hd);
    std::string qr = b.unary(op_kind::rope, sp + ".q.rope", q);
    std::string kr = b.unary(op_kind::rope, sp + ".k.rope", k);
    std::string kt = b.transpose(sp + ".kt", kr, {0, 2, 1});  // [hs·b, hd, S]
    std::string sc = b.matmul(sp + ".scores", qr, kt);        // [hs·b, S, S]
    std::string ss = b.scale(sp + ".scaled", sc, 1.0 / std::sqrt(double(hd)));
    std::string pr = b.unary(op_kind::softmax, sp + ".probs", ss);
    std::string cx = b.matmul(sp + ".ctx", pr, v);  // [hs·b, S, hd]
    if (hs > 1) {                                   // unfold: back to [b, S, hs·hd]
      ids heads(static_cast<std::size_t>(hs));
      for (std::int64_t h = 0; h < hs; ++h)
        heads[std::size_t(h)] = b.slice(fmt::format("{}.h{}", cx, h), cx, 0, h * B, (h + 1) * B);
      cx = b.concat(sp + ".ctx.cat", heads, 2);
    }
    partial[std::size_t(i)] = b.matmul(sp + ".o", cx, wo);  // row-parallel Wo: [b, S, dim]
  }
  std::string sum = s == 1 ? partial[0] : b.reduce_sum(lp + ".attn.sum", partial);
  return b.binary(op_kind::add, lp + ".attn.out", x, sum);
}

/// Pre-norm SwiGLU FFN of layer l, sharded on the ffn axis; returns the residual output's id.
std::string swiglu(graph_builder& b, const workload_params& p, std::int64_t l, const std::string& x) {
  const std::int64_t s = p.shards, fs = p.ffn / p.shards;
  const std::string lp = fmt::format("l{}", l);
  std::string nw = b.input(lp + ".ffn.norm.w", {p.dim});
  std::string xn = b.binary(op_kind::rmsnorm, lp + ".ffn.norm", x, nw);
  ids partial(static_cast<std::size_t>(s));
  for (std::int64_t i = 0; i < s; ++i) {
    const std::string sp = fmt::format("{}.s{}", lp, i);
    std::string w1 = b.input(sp + ".w1", {p.dim, fs});
    std::string w3 = b.input(sp + ".w3", {p.dim, fs});
    std::string w2 = b.input(sp + ".w2", {fs, p.dim});
    std::string g = b.matmul(sp + ".gate", xn, w1);
    std::string u = b.matmul(sp + ".up", xn, w3);
    std::string a = b.unary(op_kind::silu, sp + ".act", g);
    std::string h = b.binary(op_kind::mul, sp + ".hidden", a, u);
    partial[std::size_t(i)] = b.matmul(sp + ".down", h, w2);
  }
  std::string sum = s == 1 ? partial[0] : b.reduce_sum(lp + ".ffn.sum", partial);
  return b.binary(op_kind::add, lp + ".ffn.out", x, sum);
}

graph llama_block(const workload_params& p) {
  check_llama(p, false);
  check_size(1 + attention_ops(p));
  graph_builder b("llama-block", p.type);
  b.reserve(static_cast<std::size_t>(1 + attention_ops(p)));
  std::string x = b.input("x", {p.batch, p.seq, p.dim});
  attention(b, p, 0, x);
  return std::move(b).build();
}

graph llama_layer(const workload_params& p) {
  check_llama(p, true);
  const double n = 1 + double(p.layers) * (attention_ops(p) + swiglu_ops(p));
  check_size(n);
  graph_builder b("llama-layer", p.type);
  b.reserve(static_cast<std::size_t>(n));
  std::string x = b.input("x", {p.batch, p.seq, p.dim});
  for (std::int64_t l = 0; l < p.layers; ++l) x = swiglu(b, p, l, attention(b, p, l, x));
  return std::move(b).build();
}

// ---- moe-layer ----------------------------------------------------------------------------------

graph moe_layer(const workload_params& p) {
  positive({{"dim", p.dim}, {"ffn", p.ffn}, {"seq", p.seq}, {"batch", p.batch},
            {"layers", p.layers}, {"experts", p.experts}, {"top_k", p.top_k}});
  if (p.top_k > p.experts)
    bad(fmt::format("`top_k` ({}) must not exceed `experts` ({})", p.top_k, p.experts));
  const std::int64_t T = p.batch * p.seq, E = p.experts, K = p.top_k;
  divisible("seq*batch*top_k", T * K, "experts", E);
  check_size(moe_ops(p));

  const std::int64_t C = T * K / E;  // static expert capacity
  graph_builder b("moe-layer", p.type);
  b.reserve(static_cast<std::size_t>(moe_ops(p)));
  std::string x = b.input("x", {T, p.dim});
  for (std::int64_t l = 0; l < p.layers; ++l) {
    const std::string lp = fmt::format("l{}", l);
    std::string nw = b.input(lp + ".norm.w", {p.dim});
    std::string xn = b.binary(op_kind::rmsnorm, lp + ".norm", x, nw);
    std::string wr = b.input(lp + ".router.w", {p.dim, E});
    std::string logits = b.matmul(lp + ".router.logits", xn, wr);
    std::string probs = b.unary(op_kind::softmax, lp + ".router.probs", logits);  // [T, E]
    std::string ones = b.input(lp + ".ones", {1, p.dim});
    // Static top-k dispatch: K copies of the token stream, cut into E slices of C = T·K/E rows.
    std::string routed = xn, rprobs = probs;
    if (K > 1) {
      routed = b.concat(lp + ".dispatch", ids(static_cast<std::size_t>(K), xn), 0);       // [K·T, dim]
      rprobs = b.concat(lp + ".dispatch.probs", ids(static_cast<std::size_t>(K), probs), 0);  // [K·T, E]
    }
    ids outs(static_cast<std::size_t>(E));
    for (std::int64_t e = 0; e < E; ++e) {
      const std::string ep = fmt::format("{}.e{}", lp, e);
      std::string xe = b.slice(ep + ".x", routed, 0, e * C, (e + 1) * C);  // [C, dim]
      std::string w1 = b.input(ep + ".w1", {p.dim, p.ffn});
      std::string w3 = b.input(ep + ".w3", {p.dim, p.ffn});
      std::string w2 = b.input(ep + ".w2", {p.ffn, p.dim});
      std::string g = b.matmul(ep + ".gate", xe, w1);
      std::string u = b.matmul(ep + ".up", xe, w3);
      std::string a = b.unary(op_kind::silu, ep + ".act", g);
      std::string h = b.binary(op_kind::mul, ep + ".hidden", a, u);
      std::string y = b.matmul(ep + ".down", h, w2);  // [C, dim]
      // Router weight of each routed row for this expert, broadcast along dim by an outer product
      // with a ones row (mul broadcasts only over leading axes), then applied by mul.
      std::string pr = b.slice(ep + ".p.rows", rprobs, 0, e * C, (e + 1) * C);  // [C, E]
      std::string pe = b.slice(ep + ".p", pr, 1, e, e + 1);                        // [C, 1]
      std::string gw = b.matmul(ep + ".g", pe, ones);                               // [C, dim]
      outs[std::size_t(e)] = b.binary(op_kind::mul, ep + ".y", y, gw);
    }
    // Combine: undo the dispatch (concat the experts' rows), then sum each token's K copies.
    std::string comb = E == 1 ? outs[0] : b.concat(lp + ".combine", outs, 0);  // [K·T, dim]
    if (K > 1) {
      ids copies(static_cast<std::size_t>(K));
      for (std::int64_t j = 0; j < K; ++j)
        copies[std::size_t(j)] = b.slice(fmt::format("{}.combine.c{}", lp, j), comb, 0, j * T, (j + 1) * T);
      comb = b.reduce_sum(lp + ".combine.sum", copies);
    }
    x = b.binary(op_kind::add, lp + ".out", x, comb);
  }
  return std::move(b).build();
}

struct generator {
  std::string_view name, description;
  graph (*make)(const workload_params&);
};

constexpr generator generators[] = {
    {"chainmm", "chained dim x dim matmuls M0·M1·…; each product is a shards x shards grid of block "
                "matmuls summed per row block by reduce_sum", chainmm},
    {"ffnn", "MLP layers dim -> ffn -> dim (gelu, silu alternating), Megatron tensor-parallel over "
             "shards, partials summed by reduce_sum", ffnn},
    {"llama-block", "Llama attention block: rmsnorm, heads sharded over shards (Q/K/V, rope, softmax "
                    "attention), row-parallel output projection, reduce_sum, residual", llama_block},
    {"llama-layer", "Llama decoder layers: the attention block, then rmsnorm and a SwiGLU FFN "
                    "sharded on the ffn axis, reduce_sum, residual", llama_layer},
    {"moe-layer", "MoE FFN layers: rmsnorm, softmax router, static-capacity top-k dispatch to SwiGLU "
                  "experts, router-weighted combine, residual", moe_layer},
};

const generator& find_generator(std::string_view name) {
  for (const auto& g : generators)
    if (g.name == name) return g;
  std::string known;
  for (const auto& g : generators) known += (known.empty() ? "" : ", ") + std::string(g.name);
  throw error(errc::unknown_kind, fmt::format("unknown workload '{}' (known: {})", name, known));
}

}  // namespace

std::vector<std::string> workload_names() {
  std::vector<std::string> out;
  for (const auto& g : generators) out.emplace_back(g.name);
  return out;
}

std::string workload_description(std::string_view name) {
  return std::string(find_generator(name).description);
}

graph make_workload(std::string_view name, const workload_params& p) {
  return find_generator(name).make(p);
}

}  // namespace doppler
