// The graph model: per-kind shape rules and FLOPs, the builder, adjacency and graph algorithms.

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph.hpp>
#include <doppler/runtime/graph_algos.hpp>

#include <doctest/doctest.h>

using namespace doppler;

namespace {
shape_check check(op_kind k, std::vector<shape_t> ins, op_attrs a = {}) {
  std::vector<const shape_t*> ptrs;
  for (auto& s : ins) ptrs.push_back(&s);
  return infer_shape(k, ptrs, a);
}
double flops_of(op_kind k, std::vector<shape_t> ins, op_attrs a = {}) {
  std::vector<const shape_t*> ptrs;
  for (auto& s : ins) ptrs.push_back(&s);
  auto c = infer_shape(k, ptrs, a);
  REQUIRE(c.ok());
  return derived_flops(k, ptrs, c.shape, a);
}
}  // namespace

TEST_CASE("op kind names round-trip and unknown names are rejected") {
  CHECK(all_op_kinds().size() == op_kind_count);
  for (op_kind k : all_op_kinds()) CHECK(parse_op_kind(to_string(k)) == k);
  CHECK_FALSE(parse_op_kind("conv2d"));
  CHECK(size_of(dtype::f32) == 4);
  CHECK(size_of(dtype::bf16) == 2);
  CHECK(parse_dtype("f16") == dtype::f16);
  CHECK_FALSE(parse_dtype("f64"));
}

TEST_CASE("matmul: shapes, batching and FLOPs") {
  CHECK(check(op_kind::matmul, {{64, 128}, {128, 256}}).shape == shape_t{64, 256});
  CHECK(check(op_kind::matmul, {{8, 64, 128}, {128, 32}}).shape == shape_t{8, 64, 32});
  CHECK(check(op_kind::matmul, {{8, 64, 128}, {8, 128, 32}}).shape == shape_t{8, 64, 32});
  CHECK_FALSE(check(op_kind::matmul, {{64, 128}, {127, 256}}).ok());
  CHECK_FALSE(check(op_kind::matmul, {{8, 64, 128}, {4, 128, 32}}).ok());  // batch differs
  CHECK_FALSE(check(op_kind::matmul, {{128}, {128, 2}}).ok());             // rank 1
  CHECK_FALSE(check(op_kind::matmul, {{64, 128}}).ok());                   // arity
  CHECK(flops_of(op_kind::matmul, {{8, 64, 128}, {128, 32}}) == 2.0 * 8 * 64 * 32 * 128);
}

TEST_CASE("elementwise kinds: add/mul broadcast over leading axes only") {
  CHECK(check(op_kind::add, {{4, 8}, {4, 8}}).shape == shape_t{4, 8});
  CHECK(check(op_kind::mul, {{2, 4, 8}, {8}}).shape == shape_t{2, 4, 8});
  CHECK(check(op_kind::mul, {{2, 4, 8}, {4, 8}}).ok());
  CHECK_FALSE(check(op_kind::add, {{4, 8}, {4}}).ok());  // trailing broadcast is not allowed
  CHECK_FALSE(check(op_kind::add, {{8}, {4, 8}}).ok());  // y larger than x
  CHECK(flops_of(op_kind::add, {{4, 8}, {8}}) == 32);
  CHECK(flops_of(op_kind::mul, {{4, 8}, {4, 8}}) == 32);
}

TEST_CASE("unary kinds keep the shape and have per-element FLOPs") {
  const shape_t x{4, 8};
  struct row { op_kind k; double per_elem; };
  for (auto r : {row{op_kind::silu, 4}, row{op_kind::gelu, 8}, row{op_kind::exp, 1},
                 row{op_kind::softmax, 5}, row{op_kind::rope, 3}}) {
    CAPTURE(to_string(r.k));
    CHECK(check(r.k, {x}).shape == x);
    CHECK(flops_of(r.k, {x}) == r.per_elem * 32);
    CHECK_FALSE(check(r.k, {x, x}).ok());
  }
  op_attrs a;
  a.factor = 0.5;
  CHECK(check(op_kind::scale, {x}, a).shape == x);
  CHECK(flops_of(op_kind::scale, {x}, a) == 32);
  // The kernels multiply in float32: a factor it cannot hold is refused (1e39 gave inf, 1e-50 zero).
  for (double bad : {1e39, -1e39, 1e-50, -1e-40}) {
    a.factor = bad;
    CAPTURE(bad);
    CHECK_FALSE(check(op_kind::scale, {x}, a).ok());
  }
  for (double fine : {0.0, 3e38, -1.2e-38, 0.125}) {
    a.factor = fine;
    CAPTURE(fine);
    CHECK(check(op_kind::scale, {x}, a).ok());
  }
  CHECK_FALSE(check(op_kind::rope, {{4, 7}}).ok());
}

TEST_CASE("rmsnorm takes a weight of the last axis") {
  CHECK(check(op_kind::rmsnorm, {{4, 8}, {8}}).shape == shape_t{4, 8});
  CHECK_FALSE(check(op_kind::rmsnorm, {{4, 8}, {4}}).ok());
  CHECK_FALSE(check(op_kind::rmsnorm, {{4, 8}, {1, 8}}).ok());
  CHECK(flops_of(op_kind::rmsnorm, {{4, 8}, {8}}) == 4 * 32);
}

TEST_CASE("transpose, concat, slice: data movement with zero FLOPs") {
  op_attrs t;
  t.perm = {2, 0, 1};
  CHECK(check(op_kind::transpose, {{2, 3, 4}}, t).shape == shape_t{4, 2, 3});
  t.perm = {0, 0, 1};
  CHECK_FALSE(check(op_kind::transpose, {{2, 3, 4}}, t).ok());
  t.perm = {1, 0};
  CHECK_FALSE(check(op_kind::transpose, {{2, 3, 4}}, t).ok());

  op_attrs c;
  c.axis = 1;
  CHECK(check(op_kind::concat, {{2, 3}, {2, 5}, {2, 1}}, c).shape == shape_t{2, 9});
  c.axis = -1;
  CHECK(check(op_kind::concat, {{2, 3}, {2, 5}}, c).shape == shape_t{2, 8});
  c.axis = 0;
  CHECK_FALSE(check(op_kind::concat, {{2, 3}, {2, 5}}, c).ok());
  c.axis = 2;
  CHECK_FALSE(check(op_kind::concat, {{2, 3}}, c).ok());
  CHECK(flops_of(op_kind::concat, {{2, 3}, {2, 3}}, op_attrs{}) == 0);
  // Five extents of 2^62 wrap a signed 64-bit sum back to 2^62: refused, not matched.
  c.axis = 0;
  const std::int64_t big = std::int64_t{1} << 62;
  auto wrapped = check(op_kind::concat, {{big}, {big}, {big}, {big}, {big}}, c);
  CHECK_FALSE(wrapped.ok());
  CHECK(wrapped.problem.find("past 64 bits") != std::string::npos);

  op_attrs s;
  s.axis = 1;
  s.start = 2;
  s.end = 5;
  CHECK(check(op_kind::slice, {{4, 8}}, s).shape == shape_t{4, 3});
  s.end = 9;
  CHECK_FALSE(check(op_kind::slice, {{4, 8}}, s).ok());
  s.start = 5;
  s.end = 5;
  CHECK_FALSE(check(op_kind::slice, {{4, 8}}, s).ok());
}

TEST_CASE("reduce_sum sums same-shaped partials") {
  CHECK(check(op_kind::reduce_sum, {{4, 8}, {4, 8}, {4, 8}}).shape == shape_t{4, 8});
  CHECK_FALSE(check(op_kind::reduce_sum, {{4, 8}, {8, 4}}).ok());
  CHECK(flops_of(op_kind::reduce_sum, {{4, 8}, {4, 8}, {4, 8}}) == 2 * 32);
  CHECK(check(op_kind::synthetic, {}).ok());
  CHECK_FALSE(check(op_kind::input, {{4}}).ok());
}

TEST_CASE("builder infers shapes and rejects mismatches at once") {
  graph_builder b("mlp");
  b.input("x", {64, 128});
  b.input("w", {128, 256});
  b.matmul("h", "x", "w");
  CHECK(b.shape_of("h") == shape_t{64, 256});
  b.unary(op_kind::silu, "a", "h");
  CHECK_THROWS_AS(b.matmul("bad", "x", "h"), error);  // 128 vs 64
  CHECK_THROWS_AS(b.input("x", {1}), error);          // duplicate id
  graph g = std::move(b).build();
  CHECK(g.size() == 4);
  CHECK(g.name() == "mlp");
  graph copy = g;  // the id index survives copies
  CHECK(copy.find("a") == g.find("a"));
  CHECK_FALSE(copy.find("bad"));
}

TEST_CASE("adjacency, topological order and levels") {
  // x -> a -> c ; x -> b -> c ; c -> d ; w -> d
  graph_builder b;
  b.input("x", {4});
  b.unary(op_kind::silu, "a", "x");
  b.unary(op_kind::exp, "b", "x");
  b.binary(op_kind::add, "c", "a", "b");
  b.input("w", {4});
  b.binary(op_kind::mul, "d", "c", "w");
  graph g = std::move(b).build();
  CHECK(g.edge_count() == 6);
  auto x = *g.find("x"), c = *g.find("c"), d = *g.find("d"), w = *g.find("w");
  CHECK(g.succs(x).size() == 2);
  CHECK(g.preds(c).size() == 2);
  std::vector<std::size_t> pos(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) pos[g.topo_order()[i]] = i;
  for (std::size_t v = 0; v < g.size(); ++v)
    for (op_index u : g.preds(static_cast<op_index>(v))) CHECK(pos[u] < pos[v]);
  auto lv = levels(g);
  CHECK(lv[x] == 0);
  CHECK(lv[w] == 0);
  CHECK(lv[c] == 2);
  CHECK(lv[d] == 3);
  CHECK(depth(g) == 4);
}

TEST_CASE("top and bottom levels by hand") {
  // chain a -> b -> c with a -> c, node costs 1, 2, 3 and edge costs (per producer) 10, 20, 0
  graph_builder bl;
  op_spec a{"a", op_kind::synthetic, {}, {}, {}, 1.0, 4.0, ""};
  op_spec b{"b", op_kind::synthetic, {"a"}, {}, {}, 2.0, 4.0, ""};
  op_spec c{"c", op_kind::synthetic, {"b", "a"}, {}, {}, 3.0, 4.0, ""};
  bl.push(a);
  bl.push(b);
  bl.push(c);
  graph g = std::move(bl).build();
  std::vector<double> node{1, 2, 3}, edge{10, 20, 0};
  auto tl = top_levels(g, node, edge);
  CHECK(tl[0] == 0);
  CHECK(tl[1] == 11);       // 0 + 1 + 10
  CHECK(tl[2] == 33);       // max(11 + 2 + 20, 0 + 1 + 10)
  auto bv = bottom_levels(g, node, edge);
  CHECK(bv[2] == 3);
  CHECK(bv[1] == 25);       // 2 + 20 + 3
  CHECK(bv[0] == 36);       // 1 + 10 + max(25, 3)
  CHECK(critical_path(g, node, edge) == 36);
  CHECK(critical_path(g, node) == 6);  // no communication
  CHECK(op_flops(g) == node);
}
