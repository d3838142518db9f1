// Workload generators: structure, op counts, FLOPs, parameter checks (docs/workloads.md).
//
// FLOP formulas relied on (op.cpp's derived_flops, docs/formats.md): matmul 2·batch·m·n·k;
// add, mul, scale, exp: numel; silu 4·numel; gelu 8·numel; softmax 5·numel; rmsnorm 4·numel;
// rope 3·numel; reduce_sum (inputs − 1)·numel; input, transpose, concat, slice: 0.
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <string>

using namespace doppler;

namespace {

workload_params with(std::int64_t shards, std::int64_t layers = 1) {
  workload_params p;
  p.shards = shards;
  p.layers = layers;
  return p;
}

/// FLOPs of all ops of one kind.
double flops_of(const graph& g, op_kind k) {
  double f = 0;
  for (const auto& o : g.ops())
    if (o.kind == k) f += o.flops;
  return f;
}

std::size_t count_of(const graph& g, op_kind k) {
  std::size_t n = 0;
  for (const auto& o : g.ops()) n += o.kind == k ? 1 : 0;
  return n;
}

/// Executable: every op has a real kind and a shape; no dead ops (the graph has exactly one sink).
void check_executable(const graph& g) {
  std::size_t sinks = 0;
  for (op_index i = 0; i < g.size(); ++i) {
    const op& o = g[i];
    CHECK_MESSAGE(o.kind != op_kind::synthetic, o.id);
    CHECK_MESSAGE(!o.shape.empty(), o.id);
    CHECK((o.kind == op_kind::input) == o.inputs.empty());
    sinks += g.succs(i).empty() ? 1 : 0;
  }
  CHECK(sinks == 1);
}

void check_bad(const std::string& name, const workload_params& p, const std::string& param) {
  CAPTURE(name);
  CAPTURE(param);
  try {
    (void)make_workload(name, p);
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.code() == errc::bad_argument);
    CHECK_MESSAGE(e.reason().find(param) != std::string::npos, e.reason());
  }
}

// ---- closed forms (δ = [shards > 1], g = [heads per shard > 1]) --------------------------------
double d(bool c) { return c ? 1 : 0; }
double chainmm_ops(double n, double s) { return s == 1 ? 2 * n - 1 : n * s + (n - 1) * (2 * s * s + s) + 1; }
double ffnn_ops(double L, double s) { return 1 + L * (5 * s + d(s > 1)); }
double attn_ops(double s, double hs) { return 3 + d(s > 1) + s * (15 + d(hs > 1) * (4 * hs + 4)); }
double swiglu_ops(double s) { return 3 + 8 * s + d(s > 1); }
double moe_ops(double L, double E, double K) { return 1 + L * (7 + 13 * E + d(E > 1) + d(K > 1) * (K + 3)); }

/// FLOPs of one attention block: T = b·S tokens, D dim, H heads, s shards.
double attn_flops(double b, double S, double D, double H, double s) {
  double T = b * S;
  return 8 * T * D * D + 4 * b * S * S * D + 6 * H * b * S * S + (10 + s) * T * D;
}
double swiglu_flops(double T, double D, double F, double s) { return 6 * T * D * F + 5 * T * F + (4 + s) * T * D; }

}  // namespace

TEST_CASE("names, descriptions and unknown workloads") {
  auto names = workload_names();
  CHECK(names == std::vector<std::string>{"chainmm", "ffnn", "llama-block", "llama-layer", "moe-layer"});
  for (const auto& n : names) CHECK(!workload_description(n).empty());
  try {
    (void)make_workload("gpt-5", workload_params{});
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.code() == errc::unknown_kind);
    CHECK(e.reason().find("gpt-5") != std::string::npos);
  }
  CHECK_THROWS_AS((void)workload_description("nope"), error);
}

TEST_CASE("every generator builds with defaults and shards 1/2/4/8, and is executable") {
  for (const auto& name : workload_names()) {
    for (std::int64_t s : {1, 2, 4, 8}) {
      CAPTURE(name);
      CAPTURE(s);
      graph g = make_workload(name, with(s, 2));
      CHECK(g.name() == name);
      CHECK(g.size() > 10);
      check_executable(g);
    }
    check_executable(make_workload(name, workload_params{}));
  }
}

TEST_CASE("op counts by hand") {
  workload_params p;
  p.dim = 8, p.heads = 2, p.ffn = 16, p.seq = 4, p.batch = 1;

  // chainmm, 3 matrices. shards 1: m0 m1 m2 p1 p2 = 5. shards 2: 2 row blocks of m0 + 2 k-blocks of
  // m1, m2 (6 inputs); per product 4 slices + 4 block matmuls + 2 reduce_sums (20); the concat: 27.
  p.matrices = 3, p.shards = 1;
  CHECK(make_workload("chainmm", p).size() == 5);
  p.shards = 2;
  CHECK(make_workload("chainmm", p).size() == 27);
  CHECK(count_of(make_workload("chainmm", p), op_kind::matmul) == 8);
  p.layers = 2, p.matrices = 2;  // a chain of 4: 8 inputs + 3 products × 10 + 1
  CHECK(make_workload("chainmm", p).size() == 39);

  // ffnn, 2 layers. shards 1: x + 2 × (w1 h act w2 y) = 11; shards 2: x + 2 × (2×5 + sum) = 23.
  p.layers = 2, p.shards = 1;
  CHECK(make_workload("ffnn", p).size() == 11);
  p.shards = 2;
  CHECK(make_workload("ffnn", p).size() == 23);

  // llama-block, heads 2. shards 1 (2 heads per shard): x norm.w norm; wq wk wv wo; q k v;
  // 3 × (2 head slices + concat); 2 ropes; kt; scores scaled probs ctx; 2 ctx slices + concat; o;
  // out = 3+4+3+9+2+1+4+3+1+1 = 31. shards 2 (1 head each, no folding): 3 + 2 × 15 + sum + out = 35.
  p.layers = 1, p.shards = 1;
  graph blk = make_workload("llama-block", p);
  CHECK(blk.size() == 31);
  CHECK(blk[*blk.find("l0.s0.q")].shape == shape_t{1, 4, 8});   // [b, S, hs·hd]
  CHECK(blk[*blk.find("l0.s0.qg")].shape == shape_t{2, 4, 4});  // folded: [hs·b, S, hd]
  CHECK(blk[*blk.find("l0.s0.kt")].shape == shape_t{2, 4, 4});
  CHECK(blk[*blk.find("l0.s0.scores")].shape == shape_t{2, 4, 4});
  CHECK(blk[*blk.find("l0.s0.ctx.cat")].shape == shape_t{1, 4, 8});
  CHECK(blk[*blk.find("l0.attn.out")].shape == shape_t{1, 4, 8});
  p.shards = 2;
  CHECK(make_workload("llama-block", p).size() == 35);

  // llama-layer, shards 2: the block above minus x (34) + FFN: norm.w norm; 2 × (w1 w3 w2 gate up
  // act hidden down); sum out = 20. Two layers: 1 + 2 × 54 = 109.
  p.layers = 2;
  CHECK(make_workload("llama-layer", p).size() == 109);

  // moe-layer, T = 4. experts 2, top_k 1 (capacity 2): x; norm.w norm router.w logits probs ones;
  // 2 × 13 expert ops; combine; out = 35. experts 4, top_k 2 (capacity 2): 1 + 6 + 2 dispatch
  // concats + 52 + combine + 2 copy slices + sum + out = 66.
  p.layers = 1, p.experts = 2, p.top_k = 1;
  CHECK(make_workload("moe-layer", p).size() == 35);
  p.experts = 4, p.top_k = 2;
  graph moe = make_workload("moe-layer", p);
  CHECK(moe.size() == 66);
  CHECK(moe[*moe.find("l0.e3.x")].shape == shape_t{2, 8});
  CHECK(moe[*moe.find("l0.dispatch")].shape == shape_t{8, 8});
  CHECK(moe[*moe.find("l0.combine.sum")].shape == shape_t{4, 8});
}

TEST_CASE("op counts follow the closed forms") {
  for (std::int64_t s : {1, 2, 4, 8}) {
    for (std::int64_t L : {1, 3}) {
      CAPTURE(s);
      CAPTURE(L);
      workload_params p = with(s, L);
      double hs = double(p.heads / s);
      CHECK(double(make_workload("chainmm", p).size()) == chainmm_ops(double(L * p.matrices), double(s)));
      CHECK(double(make_workload("ffnn", p).size()) == ffnn_ops(double(L), double(s)));
      CHECK(double(make_workload("llama-block", p).size()) == 1 + attn_ops(double(s), hs));
      CHECK(double(make_workload("llama-layer", p).size()) ==
            1 + double(L) * (attn_ops(double(s), hs) + swiglu_ops(double(s))));
      CHECK(double(make_workload("moe-layer", p).size()) == moe_ops(double(L), 8, 2));
    }
  }
}

TEST_CASE("FLOPs of a small llama-block, by hand") {
  workload_params p;
  p.dim = 8, p.heads = 2, p.seq = 4, p.batch = 1, p.shards = 2;  // T = 4, head_dim 4, 1 head per shard
  graph g = make_workload("llama-block", p);
  // rmsnorm [1,4,8]: 4·32 = 128.
  CHECK(flops_of(g, op_kind::rmsnorm) == 128);
  // matmul: Q,K,V 3 × 2·4·8·8 = 1536; Wo partials 2 × 2·4·4·8 = 512; scores 2 × 2·4·4·4 = 256;
  // ctx 2 × 2·4·4·4 = 256. Total 2560.
  CHECK(flops_of(g, op_kind::matmul) == 2560);
  // rope: q and k of each shard, [1,4,4] each: 4 × 3·16 = 192.
  CHECK(flops_of(g, op_kind::rope) == 192);
  // scale [1,4,4] per shard: 2 × 16 = 32; softmax 2 × 5·16 = 160.
  CHECK(flops_of(g, op_kind::scale) == 32);
  CHECK(flops_of(g, op_kind::softmax) == 160);
  // reduce_sum of 2 partials [1,4,8]: 32; residual add: 32.
  CHECK(flops_of(g, op_kind::reduce_sum) == 32);
  CHECK(flops_of(g, op_kind::add) == 32);
  CHECK(flops_of(g, op_kind::transpose) == 0);
  CHECK(g.total_flops() == 3136);
  CHECK(g.total_flops() == attn_flops(1, 4, 8, 2, 2));
}

TEST_CASE("FLOPs follow the closed forms") {
  workload_params p = with(4, 2);
  const double T = double(p.batch * p.seq), D = double(p.dim), F = double(p.ffn);
  const double s = double(p.shards), L = double(p.layers);
  // chainmm: chain of n = L·matrices; each product 2·D³ in block matmuls, (s−1)·D² in reduce_sums.
  double n = L * double(p.matrices);
  CHECK(make_workload("chainmm", p).total_flops() == (n - 1) * (2 * D * D * D + (s - 1) * D * D));
  // ffnn: per layer 4·T·D·F matmul + (s−1)·T·D reduce; gelu on layer 0 (8·T·F), silu on 1 (4·T·F).
  CHECK(make_workload("ffnn", p).total_flops() == L * (4 * T * D * F + (s - 1) * T * D) + 12 * T * F);
  CHECK(make_workload("llama-block", p).total_flops() ==
        attn_flops(double(p.batch), double(p.seq), D, double(p.heads), s));
  CHECK(make_workload("llama-layer", p).total_flops() ==
        L * (attn_flops(double(p.batch), double(p.seq), D, double(p.heads), s) + swiglu_flops(T, D, F, s)));
  // moe-layer: K = top_k routed copies per token.
  const double E = double(p.experts), K = double(p.top_k);
  CHECK(make_workload("moe-layer", p).total_flops() ==
        L * (6 * K * T * D * F + 5 * K * T * F + 2 * T * D * E + 5 * T * E + (4 + 4 * K) * T * D));
}

TEST_CASE("sharding preserves total matmul FLOPs") {
  for (const char* name : {"chainmm", "ffnn", "llama-block", "llama-layer"}) {
    CAPTURE(name);
    double one = flops_of(make_workload(name, with(1, 2)), op_kind::matmul);
    double four = flops_of(make_workload(name, with(4, 2)), op_kind::matmul);
    double eight = flops_of(make_workload(name, with(8, 2)), op_kind::matmul);
    CHECK(one > 0);
    CHECK(one == four);
    CHECK(one == eight);
  }
}

TEST_CASE("bad parameters are bad_argument errors naming the parameter") {
  for (const auto& name : workload_names()) {
    workload_params p;
    p.dim = 0;
    check_bad(name, p, "dim");
    p = {};
    p.dim = -4;
    check_bad(name, p, "dim");
  }
  workload_params p;
  p.layers = 0;
  check_bad("llama-layer", p, "layers");
  p = {}, p.shards = 0;
  check_bad("ffnn", p, "shards");
  p = {}, p.seq = -1;
  check_bad("llama-block", p, "seq");
  p = {}, p.batch = 0;
  check_bad("moe-layer", p, "batch");
  p = {}, p.heads = 0;
  check_bad("llama-block", p, "heads");
  p = {}, p.ffn = 0;
  check_bad("llama-layer", p, "ffn");
  p = {}, p.matrices = 0;
  check_bad("chainmm", p, "matrices");
  p = {}, p.matrices = 1;
  check_bad("chainmm", p, "matrices");
  p = {}, p.experts = 0;
  check_bad("moe-layer", p, "experts");
  p = {}, p.top_k = 0;
  check_bad("moe-layer", p, "top_k");
  p = {}, p.dim = 250;  // 250 % 8 heads
  check_bad("llama-block", p, "heads");
  p = {}, p.dim = 8, p.heads = 8;  // head_dim 1 cannot be rotated by rope
  check_bad("llama-block", p, "heads");
  p = {}, p.shards = 3;  // 8 heads % 3
  check_bad("llama-block", p, "shards");
  p = {}, p.shards = 16;  // 8 heads % 16
  check_bad("llama-layer", p, "shards");
  p = {}, p.ffn = 690;  // % 4 shards
  check_bad("llama-layer", p, "ffn");
  check_bad("ffnn", p, "ffn");
  p = {}, p.dim = 250;  // % 4 shards
  check_bad("chainmm", p, "shards");
  p = {}, p.top_k = 9;
  check_bad("moe-layer", p, "top_k");
  p = {}, p.seq = 5, p.top_k = 1;  // 5 tokens over 8 experts
  check_bad("moe-layer", p, "experts");
  p = {}, p.dim = std::int64_t{1} << 40;
  check_bad("ffnn", p, "dim");
  p = {}, p.layers = 1000000, p.shards = 32, p.heads = 32, p.ffn = 1024;  // ~744M ops
  check_bad("llama-layer", p, "layers");
  // moe-layer has no use for shards: any value is fine there.
  p = {}, p.shards = 3;
  CHECK_NOTHROW((void)make_workload("moe-layer", p));
}

TEST_CASE("element type follows the parameters") {
  workload_params p;
  p.type = dtype::bf16;
  graph g = make_workload("llama-block", p);
  CHECK(g.element_type() == dtype::bf16);
  const op& x = g[*g.find("x")];
  CHECK(x.shape == shape_t{1, 128, 256});
  CHECK(x.bytes == 128 * 256 * 2);
}

TEST_CASE("llama_7b preset") {
  workload_params p = workload_params::llama_7b();
  CHECK(p.dim == 4096);
  CHECK(p.heads == 32);
  CHECK(p.ffn == 11008);
  CHECK(p.seq == 2048);
  CHECK(p.batch == 1);
  graph g = make_workload("llama-layer", p);  // shapes only: nothing is allocated
  CHECK(g.total_flops() == attn_flops(1, 2048, 4096, 32, 4) + swiglu_flops(2048, 4096, 11008, 4));
  CHECK(g[*g.find("l0.s3.scores")].shape == shape_t{8, 2048, 2048});  // 8 heads per shard
  CHECK(g[*g.find("l0.s3.gate")].shape == shape_t{1, 2048, 2752});
}

TEST_CASE("a graph of more than 100k ops generates quickly") {
  workload_params p;
  p.layers = 50, p.shards = 32, p.heads = 32, p.ffn = 1024;  // 1 head per shard
  auto t0 = std::chrono::steady_clock::now();
  graph quarter = make_workload("llama-layer", p);
  const double quarter_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.layers = 200;
  t0 = std::chrono::steady_clock::now();
  graph g = make_workload("llama-layer", p);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("llama-layer layers=200 shards=32 heads=32: ", g.size(), " ops, ", g.edge_count(),
          " edges in ", secs, " s");
  // 1 + 200 × (3 + 1 + 32·15 + 3 + 8·32 + 1) = 148801.
  CHECK(g.size() == 148801);
  CHECK(g.topo_order().size() == g.size());
  CHECK(secs < 60);
  // A guard against accidental quadratic work, not a benchmark: 4x the ops take about 4x the time
  // (quadratic work would take 16x; 10x leaves room for a loaded machine).
  CHECK(quarter.size() * 4 > g.size() - 8);
  CHECK(secs < 10 * quarter_secs + 0.05);
}
