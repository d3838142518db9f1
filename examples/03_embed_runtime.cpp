// 03 — embed the runtime in your own program: a training loop that runs one placed graph per step
// and reads back outputs and measured makespans. No CAF, no Torch in what you include.
//
//     x [32,256] ─┬─ x·W0 ─┐
//                 ├─ x·W1 ─┼─ reduce_sum ─ silu ─ y        (shards of a matmul on 3 devices)
//                 └─ x·W2 ─┘
//
// Build and run:  cmake --build --preset release --target example_03_embed_runtime
//                 ./build/release/examples/example_03_embed_runtime

#include <doppler/actors/engine.hpp>
#include <doppler/runtime/placer.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  using namespace doppler;
  graph_builder b("sharded-matmul");
  b.input("x", {32, 256});
  std::vector<std::string> parts;
  for (int s = 0; s < 3; ++s) {
    std::string w = b.input("w" + std::to_string(s), {256, 256});
    parts.push_back(b.matmul("xw" + std::to_string(s), "x", w));
  }
  b.reduce_sum("sum", parts);
  b.unary(op_kind::silu, "y", "sum");
  graph g = std::move(b).build();

  cluster c = make_preset("cpu:3");
  placement p = make_placer("round-robin")->place(g, c, cost_model{}, placer_options{});
  engine e(c, engine_options{}.with_streams(1));

  for (std::uint64_t step = 0; step < 3; ++step) {  // each step: new input data (the seed)
    run_result r = e.run(g, p, run_options{}.with_seed(step).with_repeat(2));
    const tensor& y = r.outputs[*g.find("y")];
    std::printf("step %llu: y[0] = %+.5f   makespan %.3f ms (mean of %zu), %llu bytes moved\n",
                static_cast<unsigned long long>(step), y[0], 1e3 * r.mean_makespan(), r.runs.size(),
                static_cast<unsigned long long>(r.bytes_moved.back()));
  }
  return 0;
}
