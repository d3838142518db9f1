// 01 — build a graph in C++, check it, and save it as doppler-graph/1.
//
//        x [64,128]     w1 [128,256]
//              \          /
//               h = x · w1          (matmul, 2·64·256·128 FLOPs)
//                    |
//               a = silu(h)
//                    |     w2 [256,128]
//               y = a · w2
//
// Build and run:  cmake --build --preset release --target example_01_build_a_graph
//                 ./build/release/examples/example_01_build_a_graph mlp.json

#include <doppler/runtime/error.hpp>
#include <doppler/runtime/graph_algos.hpp>
#include <doppler/runtime/graph_io.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace doppler;
  graph_builder b("tiny-mlp");
  b.input("x", {64, 128});
  b.input("w1", {128, 256});
  b.input("w2", {256, 128});
  b.matmul("h", "x", "w1");             // shapes are inferred and checked as ops are added
  b.unary(op_kind::silu, "a", "h");
  b.matmul("y", "a", "w2");
  graph g = std::move(b).build();       // validates ids, inputs, shapes, acyclicity; sets costs

  auto flops = op_flops(g);
  std::printf("%zu ops, %zu edges, %.3g FLOPs, critical path %.3g FLOPs, depth %u\n", g.size(),
              g.edge_count(), g.total_flops(), critical_path(g, flops), depth(g));
  for (op_index v : g.topo_order())
    std::printf("  %-3s %-7s %-11s %.3g FLOPs, %.0f bytes\n", g[v].id.c_str(),
                std::string(to_string(g[v].kind)).c_str(), to_string(g[v].shape).c_str(), g[v].flops,
                g[v].bytes);

  try {  // a mismatch is an error, not a guess
    graph_builder bad;
    bad.input("x", {64, 128});
    bad.matmul("y", "x", "x");
    std::printf("error: a [64, 128] x [64, 128] matmul was accepted\n");
    return 1;
  } catch (const error& e) {
    std::printf("rejected as expected: %s\n", e.what());
  }

  if (argc > 1) {
    save_graph(g, argv[1]);  // atomic: a temporary file renamed into place
    std::printf("wrote %s\n", argv[1]);
  }
  return 0;
}
