// CPU backend: every kernel against a hand-computed example, the fill rule and determinism, every
// workload generator through the reference executor, and algebraic checks of the sharded graphs
// (sharded ffnn = dense MLP; sharded chainmm = the plain matrix product).
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>
#include <doppler/runtime/fnv1a.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace doppler;

namespace {

tensor t(shape_t s, std::vector<float> v) { return tensor(std::move(s), std::move(v)); }

void check_values(const tensor& got, const shape_t& shape, const std::vector<float>& want, double tol = 1e-6) {
  REQUIRE(got.shape() == shape);
  REQUIRE(got.numel() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

/// Naive reference: C[m, n] = Σ_k A[m, k] B[k, n] on raw row-major arrays, in double.
std::vector<double> naive_mm(const float* a, const float* b, std::size_t m, std::size_t k, std::size_t n) {
  std::vector<double> c(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t p = 0; p < k; ++p) c[i * n + j] += double(a[i * k + p]) * double(b[p * n + j]);
  return c;
}

/// A synthetic op spec.
op_spec synthetic_spec(std::string id, std::vector<std::string> inputs, shape_t shape, double flops, double bytes) {
  op_spec o;
  o.id = std::move(id);
  o.kind = op_kind::synthetic;
  o.inputs = std::move(inputs);
  o.shape = std::move(shape);
  o.flops = flops;
  o.bytes = bytes;
  return o;
}

const tensor& out_of(const graph& g, const std::vector<tensor>& outs, const std::string& id) {
  auto i = g.find(id);
  REQUIRE_MESSAGE(i.has_value(), id);
  return outs[*i];
}

}  // namespace

TEST_CASE("matmul: 2x3 · 3x2 by hand, batched A with shared B, batched B") {
  tensor a = t({2, 3}, {1, 2, 3, 4, 5, 6});
  tensor b = t({3, 2}, {7, 8, 9, 10, 11, 12});
  check_values(cpu::matmul(a, b), {2, 2}, {58, 64, 139, 154});

  // Batch of 2 A's against one B: the second batch entry is A scaled by -1.
  tensor a2 = t({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  check_values(cpu::matmul(a2, b), {2, 2, 2}, {58, 64, 139, 154, -58, -64, -139, -154});

  // Batched B: entry 0 the identity-like [[1,0],[0,1],[0,0]], entry 1 all ones.
  tensor b2 = t({2, 3, 2}, {1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1});
  check_values(cpu::matmul(a2, b2), {2, 2, 2}, {1, 2, 4, 5, -6, -6, -15, -15});

  CHECK_THROWS_AS(cpu::matmul(a, a), error);                       // contraction 3 vs 2
  CHECK_THROWS_AS(cpu::matmul(a2, t({3, 3, 2}, std::vector<float>(18))), error);  // batch axes differ
}

TEST_CASE("matmul agrees with a naive triple loop on odd sizes") {
  tensor a({5, 37, 19}), b({19, 23});
  fill_uniform(a, 1);
  fill_uniform(b, 2);
  tensor c = cpu::matmul(a, b);
  REQUIRE(c.shape() == shape_t{5, 37, 23});
  auto ref = naive_mm(a.data(), b.data(), 5 * 37, 19, 23);
  for (std::size_t i = 0; i < ref.size(); ++i) REQUIRE(c[i] == doctest::Approx(ref[i]).epsilon(1e-5).scale(1.0));
}

TEST_CASE("add and mul broadcast over leading axes") {
  tensor x = t({2, 3}, {1, 2, 3, 4, 5, 6});
  check_values(cpu::add(x, t({3}, {10, 20, 30})), {2, 3}, {11, 22, 33, 14, 25, 36});
  check_values(cpu::add(x, x), {2, 3}, {2, 4, 6, 8, 10, 12});
  check_values(cpu::mul(x, t({3}, {2, 0, -1})), {2, 3}, {2, 0, -3, 8, 0, -6});
  tensor x3 = t({2, 1, 2}, {1, 2, 3, 4});
  check_values(cpu::mul(x3, t({1, 2}, {10, 100})), {2, 1, 2}, {10, 200, 30, 400});
  CHECK_THROWS_AS(cpu::add(x, t({2}, {1, 2})), error);  // not a trailing-axes suffix
}

TEST_CASE("silu and gelu at the infinities and NaN: their limits, not NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  tensor x({3}, {-inf, inf, std::nanf("")});
  for (const tensor& y : {cpu::silu(x), cpu::gelu(x)}) {
    CHECK(y[0] == 0.0f);  // -inf / (1 + inf) was NaN
    CHECK(std::signbit(y[0]));
    CHECK(y[1] == inf);
    CHECK(std::isnan(y[2]));
  }
}

TEST_CASE("silu, gelu, exp, scale values") {
  tensor x = t({4}, {0, 1, -1, 2});
  // silu(1) = 1/(1+e^-1) = 0.7310585786; silu(-1) = -0.2689414214; silu(2) = 2/(1+e^-2) = 1.7615941560
  check_values(cpu::silu(x), {4}, {0, 0.7310585786f, -0.2689414214f, 1.7615941560f});
  // gelu_tanh(1) = 0.5(1 + tanh(0.7978845608 · 1.044715)) = 0.8411919906; gelu(-1) = -0.1588080094;
  // gelu(2) = 0.5·2·(1 + tanh(0.7978845608 · 2.35772)) = 1.9545976770
  check_values(cpu::gelu(x), {4}, {0, 0.8411919906f, -0.1588080094f, 1.9545976770f});
  check_values(cpu::exp(x), {4}, {1, 2.7182818285f, 0.3678794412f, 7.3890560989f});
  check_values(cpu::scale(x, -0.5), {4}, {0, -0.5f, 0.5f, -1});
}

TEST_CASE("exp matches std::exp within 2 ulp, saturates cleanly, keeps NaN") {
  std::vector<float> xs;
  for (float v = -87.0f; v <= 88.0f; v += 0.0137f) xs.push_back(v);
  tensor x(shape_t{std::int64_t(xs.size())}, xs);
  tensor y = cpu::exp(x);
  double worst = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double want = std::exp(double(xs[i]));
    worst = std::max(worst, std::fabs(double(y[i]) - want) / want);
  }
  CHECK(worst < 2.5e-7);  // 2 ulp of float is 2.4e-7 relative
  tensor edge = cpu::exp(t({4}, {-1000.0f, 1000.0f, std::nanf(""), 0.0f}));
  CHECK(edge[0] == 0.0f);
  CHECK(std::isinf(edge[1]));
  CHECK(std::isnan(edge[2]));
  CHECK(edge[3] == 1.0f);
  // silu and gelu saturate without NaN.
  tensor big = t({2}, {-1000.0f, 1000.0f});
  check_values(cpu::silu(big), {2}, {0.0f, 1000.0f});
  check_values(cpu::gelu(big), {2}, {0.0f, 1000.0f});
}

TEST_CASE("softmax: rows sum to 1, a hand value, stable for large inputs") {
  tensor x = t({2, 3}, {1, 2, 3, 1000, 1000, 1000});
  tensor y = cpu::softmax(x);
  // e^1, e^2, e^3 over their sum 30.1928748: 0.0900305732, 0.2447284711, 0.6652409558
  check_values(y, {2, 3}, {0.0900305732f, 0.2447284711f, 0.6652409558f, 1.0f / 3, 1.0f / 3, 1.0f / 3});
  for (std::size_t r = 0; r < 2; ++r) CHECK(y[3 * r] + y[3 * r + 1] + y[3 * r + 2] == doctest::Approx(1.0));
  CHECK(all_finite(y));
}

TEST_CASE("rmsnorm over the last axis with eps 1e-6") {
  tensor x = t({2, 2}, {3, 4, 0, 0});
  tensor w = t({2}, {1, 2});
  // row 0: rms = sqrt((9 + 16)/2) = 3.5355339; x/rms = 0.8485281, 1.1313708; times w
  // row 1: zeros stay zeros (eps keeps the division finite)
  check_values(cpu::rmsnorm(x, w), {2, 2}, {0.8485281374f, 2.2627416998f, 0, 0});
  tensor small = t({1, 1}, {1e-3f});
  // 1e-3 / sqrt(1e-6 + 1e-6) = 0.7071067812: eps is part of the formula
  check_values(cpu::rmsnorm(small, t({1}, {1})), {1, 1}, {0.7071067812f});
  CHECK_THROWS_AS(cpu::rmsnorm(x, t({3}, {1, 1, 1})), error);
}

TEST_CASE("rope rotates adjacent pairs by position · base^(-2i/d)") {
  // x [1, 2, 4]: position 0 is left unchanged; position 1 rotates pair 0 by 1 rad and pair 1 by
  // base^(-2/4) = 1/100 rad with base 10000.
  tensor x = t({1, 2, 4}, {1, 2, 3, 4, 1, 0, 0, 1});
  tensor y = cpu::rope(x, 10000.0);
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  check_values(y, {1, 2, 4},
               {1, 2, 3, 4, float(c1), float(s1), float(-s2), float(c2)});
  // Another base: 4 → pair 1 angle 4^(-1/2) = 0.5 at position 1.
  tensor z = cpu::rope(t({2, 4}, {0, 0, 0, 0, 0, 0, 2, 0}), 4.0);
  check_values(z, {2, 4}, {0, 0, 0, 0, 0, 0, float(2 * std::cos(0.5)), float(2 * std::sin(0.5))});
  // Rotations keep each pair's norm.
  tensor r({3, 16, 8});
  fill_uniform(r, 9);
  tensor rr = cpu::rope(r);
  for (std::size_t i = 0; i < r.numel(); i += 2)
    CHECK(std::hypot(rr[i], rr[i + 1]) == doctest::Approx(std::hypot(r[i], r[i + 1])).epsilon(1e-5));
  CHECK_THROWS_AS(cpu::rope(t({1, 3}, {1, 2, 3})), error);
}

TEST_CASE("transpose, concat, slice move the right elements") {
  tensor x = t({2, 3}, {0, 1, 2, 3, 4, 5});
  const std::vector<std::int64_t> p10{1, 0};
  check_values(cpu::transpose(x, p10), {3, 2}, {0, 3, 1, 4, 2, 5});
  // Rank 3: out[c][a][b] = x[a][b][c] for perm {2, 0, 1}.
  tensor x3({2, 3, 4});
  for (std::size_t i = 0; i < x3.numel(); ++i) x3[i] = float(i);
  const std::vector<std::int64_t> p201{2, 0, 1};
  tensor y3 = cpu::transpose(x3, p201);
  REQUIRE(y3.shape() == shape_t{4, 2, 3});
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t b = 0; b < 3; ++b)
      for (std::size_t c = 0; c < 4; ++c) CHECK(y3[(c * 2 + a) * 3 + b] == x3[(a * 3 + b) * 4 + c]);
  const std::vector<std::int64_t> p021{0, 2, 1};
  tensor back = cpu::transpose(cpu::transpose(x3, p021), p021);
  CHECK(bitwise_equal(back, x3));

  tensor y = t({2, 1}, {10, 20});
  const tensor* cat1[] = {&x, &y};
  check_values(cpu::concat(cat1, 1), {2, 4}, {0, 1, 2, 10, 3, 4, 5, 20});
  tensor z = t({1, 3}, {7, 8, 9});
  const tensor* cat0[] = {&x, &z};
  check_values(cpu::concat(cat0, -2), {3, 3}, {0, 1, 2, 3, 4, 5, 7, 8, 9});
  CHECK_THROWS_AS(cpu::concat(cat1, 0), error);

  check_values(cpu::slice(x, 1, 1, 3), {2, 2}, {1, 2, 4, 5});
  check_values(cpu::slice(x, 0, 1, 2), {1, 3}, {3, 4, 5});
  check_values(cpu::slice(x3, -1, 3, 4), {2, 3, 1}, {3, 7, 11, 15, 19, 23});
  CHECK_THROWS_AS(cpu::slice(x, 1, 2, 2), error);
  CHECK_THROWS_AS(cpu::slice(x, 2, 0, 1), error);
}

TEST_CASE("reduce_sum adds all inputs elementwise") {
  tensor a = t({2, 2}, {1, 2, 3, 4}), b = t({2, 2}, {10, 20, 30, 40}), c = t({2, 2}, {-1, -1, -1, -1});
  const tensor* xs[] = {&a, &b, &c};
  check_values(cpu::reduce_sum(xs), {2, 2}, {10, 21, 32, 43});
  tensor d = t({4}, {1, 2, 3, 4});
  const tensor* bad[] = {&a, &d};
  CHECK_THROWS_AS(cpu::reduce_sum(bad), error);
}

TEST_CASE("synthetic: output size from shape or bytes, compute rounds, deterministic") {
  graph_builder b("syn");
  b.add(synthetic_spec("s", {}, {}, 1e6, 1000.0));
  b.add(synthetic_spec("u", {"s"}, {3, 5}, 4096.0, 60.0));
  graph g = std::move(b).build();
  auto outs = execute_reference(g, 3);
  CHECK(outs[0].shape() == shape_t{250});  // 1000 bytes of f32
  CHECK(outs[1].shape() == shape_t{3, 5});
  CHECK(all_finite(outs[0]));
  CHECK(bitwise_equal(outs[0], execute_reference(g, 3)[0]));

  float buf[cpu::synthetic_buffer] = {};
  CHECK(cpu::synthetic_compute(0, buf) == 0);
  CHECK(cpu::synthetic_compute(1, buf) == 1);
  CHECK(cpu::synthetic_compute(2.0 * cpu::synthetic_buffer * 10, buf) == 10);
  CHECK(cpu::synthetic_compute(2.0 * cpu::synthetic_buffer * 10 + 1, buf) == 11);
  // More FLOPs change the computed prefix: the loop's result is part of the output.
  tensor s1 = cpu::synthetic(1e4, {300}, 5), s2 = cpu::synthetic(1e5, {300}, 5);
  CHECK_FALSE(bitwise_equal(s1, s2));
  for (std::size_t i = cpu::synthetic_buffer; i < 300; ++i) CHECK(s1[i] == s2[i]);

  graph_builder bf("half", dtype::bf16);
  bf.add(synthetic_spec("s", {}, {}, 0.0, 1001.0));
  graph gh = std::move(bf).build();
  CHECK(output_shape(gh, 0) == shape_t{501});  // ⌈1001 / 2⌉ bf16 elements, computed in f32
  // Past 2^62 elements the extent wrapped negative in the cast and passed the memory check.
  graph_builder huge("huge");
  huge.add(synthetic_spec("s", {}, {}, 0.0, 1e20));
  graph gb = std::move(huge).build();
  CHECK_THROWS_WITH_AS((void)output_shape(gb, 0), doctest::Contains("does not fit in any host's memory"), error);
  try {
    (void)execute_op(gb, 0, std::span<const tensor* const>{}, 1);
    FAIL("a 1e20-byte output was computed");
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
  }
}

TEST_CASE("fill rule: .ones inputs, scale sqrt(3/n), range, determinism by seed and id") {
  tensor ones = make_input("l0.ones", {1, 8}, 42);
  for (float v : ones.values()) CHECK(v == 1.0f);
  tensor w = make_input("w", {64, 300}, 42);
  const float lim = std::sqrt(3.0f / 300.0f);
  double sum2 = 0;
  for (float v : w.values()) {
    CHECK(v >= -lim);
    CHECK(v < lim);
    sum2 += double(v) * v;
  }
  CHECK(sum2 / double(w.numel()) == doctest::Approx(1.0 / 300).epsilon(0.05));  // variance 1/n
  CHECK(bitwise_equal(w, make_input("w", {64, 300}, 42)));
  CHECK_FALSE(bitwise_equal(w, make_input("w", {64, 300}, 43)));
  CHECK_FALSE(bitwise_equal(w, make_input("w2", {64, 300}, 42)));
  CHECK(op_seed(1, "a") != op_seed(1, "b"));
  CHECK(op_seed(1, "a") != op_seed(2, "a"));
}

TEST_CASE("fnv1a: the published 64-bit test vectors, and op seeds that files and runs depend on stay fixed") {
  auto of = [](std::string_view s) {
    fnv1a h;
    h.chars(s);
    return h.digest();
  };
  CHECK(of("") == 0xcbf29ce484222325ULL);  // the offset basis
  CHECK(of("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(of("foobar") == 0x85944171f73967e8ULL);
  fnv1a t;
  t.text("abc");  // the length (8 bytes, little-endian here) first, then the characters
  CHECK(t.digest() == 0xc11ab6d2519bc2b2ULL);
  // The learner's basis (its fingerprints and checksums are in every checkpoint written so far).
  fnv1a l(fnv1a::learner_basis);
  CHECK(l.digest() == 1469598103934665603ULL);
  l.chars("a");
  CHECK(l.digest() == 0x44bd8ad473cd9906ULL);
  fnv1a split, joined;
  split.text("ab"), split.text("c");
  joined.text("a"), joined.text("bc");
  CHECK(split.digest() != joined.digest());
  // Every synthetic tensor's values derive from these: a change would change every run's numbers.
  CHECK(op_seed(1, "a") == 0x1e294378b45c3f93ULL);
  CHECK(op_seed(42, "l0.wq") == 0x0511a2003a3166d9ULL);
}

TEST_CASE("max_abs_diff: the largest difference, and a NaN anywhere is never hidden by a later value") {
  tensor a({3}, {0.0f, 1.0f, 2.0f}), b({3}, {0.25f, 1.5f, 2.0f});
  CHECK(max_abs_diff(a, b) == 0.5);
  CHECK(max_abs_diff(a, a) == 0.0);
  CHECK(std::isinf(max_abs_diff(a, tensor({2}, {0.0f, 1.0f}))));  // shapes differ
  for (std::size_t at = 0; at < 3; ++at) {  // first, middle and last element
    tensor n = a;
    n[at] = std::nanf("");
    CAPTURE(at);
    CHECK(std::isnan(max_abs_diff(n, b)));
    CHECK(std::isnan(max_abs_diff(b, n)));
    CHECK_FALSE(max_abs_diff(n, b) <= 1e-3);  // a tolerance check fails on it
  }
}

TEST_CASE("max_rel_diff: the largest difference over the reference's scale, infinite on a NaN or a shape mismatch") {
  tensor ref({3}, {-4.0f, 1.0f, 2.0f}), a({3}, {-4.0f, 1.5f, 2.0f});
  CHECK(max_rel_diff(a, ref) == doctest::Approx(0.5 / 4.0));  // the scale is max |ref|, sign ignored
  CHECK(max_rel_diff(ref, ref) == 0.0);
  CHECK(max_rel_diff(tensor({2}, {0.0f, 0.0f}), tensor({2}, {0.0f, 0.0f})) == 0.0);  // zero reference, no error
  CHECK(max_rel_diff(tensor({2}, {0.0f, 1e-6f}), tensor({2}, {0.0f, 0.0f})) > 1e3);  // zero reference, an error
  CHECK(std::isinf(max_rel_diff(a, tensor({2}, {0.0f, 1.0f}))));
  tensor n = a;
  n[1] = std::nanf("");
  CHECK(std::isinf(max_rel_diff(n, ref)));
  CHECK(std::isinf(max_rel_diff(ref, n)));
  CHECK_FALSE(max_rel_diff(n, ref) <= 1e-3);
}

TEST_CASE("execute_op checks its inputs and names the op") {
  graph_builder b("g");
  b.input("x", {2, 3});
  b.input("w", {3, 4});
  b.matmul("h", "x", "w");
  graph g = std::move(b).build();
  tensor x({2, 3}), w({3, 4}), bad({3, 3});
  const tensor* ok[] = {&x, &w};
  CHECK(execute_op(g, 2, ok).shape() == shape_t{2, 4});
  const tensor* wrong[] = {&x, &bad};
  try {
    (void)execute_op(g, 2, wrong);
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.code() == errc::shape_mismatch);
    CHECK(std::string(e.what()).find("`h`") != std::string::npos);
  }
  const tensor* one[] = {&x};
  CHECK_THROWS_AS((void)execute_op(g, 2, one), error);

  // The DOPPLER paper's graphs are synthetic ops of 4e12 output bytes: a clear error, not a crash.
  graph_builder pb("paper");
  pb.add(synthetic_spec("n0", {}, {}, 0.0, 4e12 * 1024));
  graph pg = std::move(pb).build();
  try {
    (void)execute_op(pg, 0, {});
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
    CHECK(std::string(e.what()).find("`n0`") != std::string::npos);
  }
}

TEST_CASE("every workload runs through the reference executor with finite outputs") {
  for (const auto& name : workload_names()) {
    for (std::int64_t shards : {1, 2, 4}) {
      CAPTURE(name);
      CAPTURE(shards);
      workload_params p;
      p.shards = shards;
      graph g = make_workload(name, p);
      kernel_timer timer;
      auto outs = execute_reference(g, reference_options{}.with_seed(7).timed(timer));
      REQUIRE(outs.size() == g.size());
      for (op_index i = 0; i < g.size(); ++i) {
        CAPTURE(g[i].id);
        CHECK(outs[i].shape() == g[i].shape);
        CHECK(all_finite(outs[i]));
        CHECK(timer.runs(i) == 1);
      }
      CHECK(timer.total() > 0);
      // The sink is not degenerate (all zeros would make the algebraic checks vacuous).
      double norm = 0;
      for (op_index i = 0; i < g.size(); ++i)
        if (g.succs(i).empty())
          for (float v : outs[i].values()) norm += double(v) * v;
      CHECK(norm > 0);
      // Determinism: same seed bitwise-equal, another seed different; exits-only keeps the sink.
      auto again = execute_reference(g, reference_options{}.with_seed(7).exits_only());
      auto other = execute_reference(g, 8);
      for (op_index i = 0; i < g.size(); ++i) {
        if (!g.succs(i).empty()) {
          CHECK(again[i].empty());
          continue;
        }
        CHECK(bitwise_equal(again[i], outs[i]));
        CHECK_FALSE(bitwise_equal(other[i], outs[i]));
      }
    }
  }
}

TEST_CASE("kernels are safe to run from several threads at once (device workers)") {
  workload_params p;
  p.heads = 4;
  p.shards = 2;
  graph g = make_workload("llama-layer", p);
  const auto serial = execute_reference(g, 3);
  std::vector<std::vector<tensor>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < got.size(); ++k)
    threads.emplace_back([&, k] { got[k] = execute_reference(g, 3); });
  for (auto& th : threads) th.join();
  for (const auto& outs : got) {
    REQUIRE(outs.size() == serial.size());
    for (op_index i = 0; i < g.size(); ++i) CHECK(bitwise_equal(outs[i], serial[i]));
  }
}

TEST_CASE("sharded ffnn (shards=4) equals the dense MLP built from its input tensors") {
  workload_params p;
  p.shards = 4;
  p.seq = 32;
  graph g = make_workload("ffnn", p);
  auto outs = execute_reference(g, 11);
  const std::int64_t T = p.seq * p.batch, D = p.dim, F = p.ffn, fs = F / p.shards;
  // Assemble the dense W1 [D, F] (column blocks) and W2 [F, D] (row blocks) from the shards.
  std::vector<float> w1(std::size_t(D * F)), w2(std::size_t(F * D));
  for (std::int64_t s = 0; s < p.shards; ++s) {
    const tensor& b1 = out_of(g, outs, "l0.s" + std::to_string(s) + ".w1");
    const tensor& b2 = out_of(g, outs, "l0.s" + std::to_string(s) + ".w2");
    for (std::int64_t r = 0; r < D; ++r)
      for (std::int64_t c = 0; c < fs; ++c) w1[std::size_t(r * F + s * fs + c)] = b1[std::size_t(r * fs + c)];
    for (std::int64_t r = 0; r < fs; ++r)
      for (std::int64_t c = 0; c < D; ++c) w2[std::size_t((s * fs + r) * D + c)] = b2[std::size_t(r * D + c)];
  }
  const tensor& x = out_of(g, outs, "x");
  auto h = naive_mm(x.data(), w1.data(), std::size_t(T), std::size_t(D), std::size_t(F));
  std::vector<float> a(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    double v = h[i];
    a[i] = float(0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
  }
  auto y = naive_mm(a.data(), w2.data(), std::size_t(T), std::size_t(F), std::size_t(D));
  const tensor& got = out_of(g, outs, "l0.sum");
  REQUIRE(got.shape() == shape_t{T, D});
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    worst = std::max(worst, std::fabs(double(got[i]) - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  CHECK(scale > 1e-3);
  CHECK(worst <= 1e-4 * scale + 1e-6);
}

TEST_CASE("sharded chainmm (shards=4): the concat of row-block chains equals the dense product") {
  workload_params p;
  p.shards = 4;
  p.dim = 64;
  p.matrices = 3;
  graph g = make_workload("chainmm", p);
  auto outs = execute_reference(g, 5);
  const std::int64_t d = p.dim, bs = d / p.shards;
  // Dense M_j assembled from its row blocks (m{j}.k{t} for j ≥ 1, m0.r{i} for j = 0).
  auto dense = [&](std::int64_t j) {
    std::vector<float> m(std::size_t(d * d));
    for (std::int64_t t = 0; t < p.shards; ++t) {
      std::string id = j == 0 ? "m0.r" + std::to_string(t) : "m" + std::to_string(j) + ".k" + std::to_string(t);
      const tensor& blk = out_of(g, outs, id);
      std::copy_n(blk.data(), bs * d, m.data() + t * bs * d);
    }
    return m;
  };
  std::vector<float> acc = dense(0);
  for (std::int64_t j = 1; j < p.matrices; ++j) {
    auto m = dense(j);
    auto prod = naive_mm(acc.data(), m.data(), std::size_t(d), std::size_t(d), std::size_t(d));
    acc.assign(prod.begin(), prod.end());
  }
  const tensor& got = out_of(g, outs, "out");
  REQUIRE(got.shape() == shape_t{d, d});
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < acc.size(); ++i) {
    worst = std::max(worst, std::fabs(double(got[i]) - double(acc[i])));
    scale = std::max(scale, std::fabs(double(acc[i])));
  }
  CHECK(scale > 1e-3);
  CHECK(worst <= 1e-4 * scale + 1e-6);
}
