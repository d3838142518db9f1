// Tests of the CUDA backend (doppler::cuda). Compiled by the host compiler: the public headers need
// no CUDA header. Without a GPU (here: cudaGetDeviceCount error 35) every GPU case reports a skip
// and returns; the host-side parts (launch geometry, index math shared with the kernels, the fill
// and synthetic emulation, error translation, GPU probing) are tested for real everywhere.
#include <doppler/cuda/cuda_backend.hpp>
#include <doppler/cuda/kernel_math.hpp>
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/cpu_kernels.hpp>
#include <doppler/runtime/workloads.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

using namespace doppler;
namespace dc = doppler::cuda;

namespace {

tensor random_tensor(shape_t s, std::uint64_t seed) {
  tensor t(std::move(s));
  fill_uniform(t, seed);
  return t;
}

}  // namespace

// ---- host-side: the index math the kernels run --------------------------------------------------

TEST_CASE("grid_for and row_block: launch geometry") {
  CHECK(dc::grid_for(0).blocks == 0);
  CHECK(dc::grid_for(1).blocks == 1);
  CHECK(dc::grid_for(256).blocks == 1);
  CHECK(dc::grid_for(257).blocks == 2);
  CHECK(dc::grid_for(257).threads == dc::elementwise_block);
  CHECK(dc::grid_for(std::uint64_t(1) << 40).blocks == dc::max_grid_blocks);
  CHECK(dc::grid_for(1000, 128, 4).blocks == 4);
  // Every element is visited exactly once by the grid-stride loop.
  for (std::uint64_t n : {1ull, 255ull, 256ull, 1000ull, 70000ull}) {
    const auto g = dc::grid_for(n, 64, 8);
    std::vector<int> seen(n, 0);
    for (std::uint64_t b = 0; b < g.blocks; ++b)
      for (std::uint64_t t = 0; t < g.threads; ++t)
        for (std::uint64_t i = b * g.threads + t; i < n; i += std::uint64_t(g.blocks) * g.threads) ++seen[i];
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  }
  CHECK(dc::row_block(1) == 32);
  CHECK(dc::row_block(33) == 64);
  CHECK(dc::row_block(128) == 128);
  CHECK(dc::row_block(5000) == 1024);
}

TEST_CASE("broadcast_index reproduces cpu::add and cpu::mul broadcasting") {
  const tensor x = random_tensor({3, 4, 5}, 1);
  for (shape_t ys : {shape_t{5}, shape_t{4, 5}, shape_t{3, 4, 5}}) {
    const tensor y = random_tensor(ys, 2);
    const tensor want_add = cpu::add(x, y), want_mul = cpu::mul(x, y);
    tensor got_add(x.shape()), got_mul(x.shape());
    for (std::uint64_t i = 0; i < x.numel(); ++i) {
      got_add[i] = x[i] + y[dc::broadcast_index(i, y.numel())];
      got_mul[i] = x[i] * y[dc::broadcast_index(i, y.numel())];
    }
    CHECK(bitwise_equal(got_add, want_add));
    CHECK(bitwise_equal(got_mul, want_mul));
  }
  CHECK(dc::broadcast_index(7, 0) == 0);
}

TEST_CASE("transpose_source gathers like cpu::transpose for every permutation up to rank 4") {
  for (int rank = 1; rank <= 4; ++rank) {
    shape_t dims;
    for (int a = 0; a < rank; ++a) dims.push_back(2 + a);
    const tensor x = random_tensor(dims, 9);
    std::vector<std::int64_t> perm(static_cast<std::size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    do {
      dc::transpose_geometry g;
      REQUIRE(dc::make_transpose_geometry(dims.data(), rank, perm.data(), g));
      const tensor want = cpu::transpose(x, perm);
      tensor got(want.shape());
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.numel()); ++i)
        got[static_cast<std::size_t>(i)] = x[static_cast<std::size_t>(dc::transpose_source(i, g))];
      CHECK(bitwise_equal(got, want));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  dc::transpose_geometry g;
  const std::int64_t dims[3] = {2, 3, 4}, dup[3] = {0, 0, 1}, out_of_range[3] = {0, 1, 3};
  CHECK_FALSE(dc::make_transpose_geometry(dims, 3, dup, g));
  CHECK_FALSE(dc::make_transpose_geometry(dims, 3, out_of_range, g));
  const std::int64_t big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, id9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  CHECK_FALSE(dc::make_transpose_geometry(big, 9, id9, g));
}

TEST_CASE("rope_position and the angle rule reproduce cpu::rope") {
  for (shape_t s : {shape_t{8}, shape_t{6, 8}, shape_t{2, 3, 5, 4}}) {
    const tensor x = random_tensor(s, 3);
    const tensor want = cpu::rope(x, 500.0);
    const std::int64_t d = s.back(), half = d / 2, seq = s.size() >= 2 ? s[s.size() - 2] : 1;
    tensor got(s);
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(x.numel()) / 2; ++k) {
      const double theta = double(dc::rope_position(k, half, seq)) *
                           std::pow(500.0, dc::rope_inv_freq_exponent(k % half, d));
      const float c = float(std::cos(theta)), sn = float(std::sin(theta));
      const auto i = static_cast<std::size_t>(2 * k);
      got[i] = x[i] * c - x[i + 1] * sn;
      got[i + 1] = x[i] * sn + x[i + 1] * c;
    }
    CHECK(max_abs_diff(got, want) <= 1e-6);
  }
}

TEST_CASE("fill_value is bit-identical to the CPU fill rule and input fills") {
  for (shape_t s : {shape_t{1}, shape_t{7}, shape_t{16, 33}}) {
    const tensor want = make_input("w.q", s, 42);
    const std::uint64_t base = dc::splitmix64(op_seed(42, "w.q"));
    tensor got(s);
    for (std::uint64_t i = 0; i < got.numel(); ++i) got[i] = dc::fill_value(base, i, input_fill_scale(s));
    CHECK(bitwise_equal(got, want));
  }
}

TEST_CASE("synthetic_rounds and the kernel's loop order match cpu::synthetic bit for bit") {
  for (double flops : {0.0, -1.0, 1.0, 511.0, 512.0, 513.0, 1e6}) {
    std::array<float, cpu::synthetic_buffer> buf{};
    CHECK(dc::synthetic_rounds(flops) == cpu::synthetic_compute(flops, buf));
  }
  // Emulate synthetic_kernel: thread i owns element i, separate multiply and add per round.
  const std::uint64_t seed = op_seed(3, "syn");
  for (shape_t s : {shape_t{100}, shape_t{300}}) {
    const double flops = 4096 * 7;
    const tensor want = cpu::synthetic(flops, s, seed);
    tensor got(s);
    const std::uint64_t base = dc::splitmix64(seed);
    for (std::uint64_t i = 0; i < got.numel(); ++i) got[i] = dc::fill_value(base, i, 1.0f);
    const std::uint64_t buf_base = dc::splitmix64(seed ^ 0x5deece66dULL);
    for (unsigned i = 0; i < cpu::synthetic_buffer && i < got.numel(); ++i) {
      float b = dc::fill_value(buf_base, i, 1.0f);
      volatile float c = b * 1e-3f;  // volatile: no contraction on the host either
      for (std::uint64_t k = 0; k < dc::synthetic_rounds(flops); ++k) {
        volatile float p = b * 0.9990234375f;
        b = p + c;
      }
      got[i] = b;
    }
    CHECK(bitwise_equal(got, want));
  }
}

TEST_CASE("device_options: matmul precision follows each graph's dtype unless told otherwise") {
  graph_builder b16("h", dtype::bf16), b32("f", dtype::f32);
  b16.input("x", {2, 2});
  b32.input("x", {2, 2});
  const graph g16 = std::move(b16).build(), g32 = std::move(b32).build();
  dc::device_options o;  // the default: follow the graph
  CHECK(o.matmul_in_bf16(g16));
  CHECK_FALSE(o.matmul_in_bf16(g32));
  o.follow_dtype = false;  // then bf16_matmul decides for every graph
  CHECK_FALSE(o.matmul_in_bf16(g16));
  o.bf16_matmul = true;
  CHECK(o.matmul_in_bf16(g32));
}

TEST_CASE("chunk_range cuts a transfer into disjoint covering chunks") {
  CHECK(dc::chunk_count(0, 64) == 1);
  CHECK(dc::chunk_count(100, 0) == 1);
  CHECK(dc::chunk_range(100, 0, 0).size == 100);
  for (std::uint64_t bytes : {1ull, 63ull, 64ull, 65ull, 1000ull}) {
    std::uint64_t next = 0;
    for (std::uint64_t k = 0; k < dc::chunk_count(bytes, 64); ++k) {
      const auto r = dc::chunk_range(bytes, 64, k);
      CHECK(r.offset == next);
      CHECK(r.size > 0);
      CHECK(r.size <= 64);
      next += r.size;
    }
    CHECK(next == bytes);
    CHECK(dc::chunk_range(bytes, 64, dc::chunk_count(bytes, 64)).size == 0);
  }
}

// ---- host-side: errors and probing ----------------------------------------------------------------

TEST_CASE("CUDA, cuBLAS and NCCL failures become doppler::error with file:line") {
  const error e = dc::cuda_error(35, "cudaGetDeviceCount(&n)", "device.cpp", 12);
  CHECK(e.code() == errc::internal);
  const std::string r = e.reason();
  CHECK(r.find("device.cpp:12") != std::string::npos);
  CHECK(r.find("cudaGetDeviceCount(&n) failed") != std::string::npos);
  CHECK(r.find("cudaErrorInsufficientDriver") != std::string::npos);
  CHECK(r.find("(35)") != std::string::npos);
  const std::string oom = dc::cuda_error(2, "cudaMalloc", "x.cpp", 1).reason();
  CHECK(oom.find("cudaErrorMemoryAllocation") != std::string::npos);
  const std::string blas = dc::cublas_error(13, "cublasSgemm(...)", "ops.cpp", 7).reason();  // execution failed
  CHECK(blas.find("ops.cpp:7") != std::string::npos);
  CHECK(blas.find("CUBLAS_STATUS_EXECUTION_FAILED") != std::string::npos);
  const std::string nccl = dc::nccl_error(2, "ncclSend(...)", "t.cpp", 3).reason();  // system error
  CHECK(nccl.find("t.cpp:3") != std::string::npos);
  CHECK(nccl.find("NCCL result 2") != std::string::npos);
}

TEST_CASE("gpu_available: a missing GPU or driver is 'no GPU' with a reason, never an exception") {
  std::string why;
  const bool ok = dc::gpu_available(&why);
  const dc::gpu_status& s = dc::probe_gpus();
  CHECK(ok == s.available);
  if (ok) {
    CHECK(s.devices >= 1);
    CHECK(why.empty());
    MESSAGE("GPUs: " << s.devices << ", first: " << s.names.front());
  } else {
    CHECK(s.devices == 0);
    CHECK(why.find("cudaGetDeviceCount") != std::string::npos);
    MESSAGE("no GPU: " << why);
    // Constructing a device says so instead of crashing.
    CHECK_THROWS_AS(dc::cuda_device(0, dc::device_options{}), error);
    try {
      dc::cuda_device dev(0, dc::device_options{});
    } catch (const error& err) {
      CHECK(err.code() == errc::infeasible);
      CHECK(std::string(err.what()).find("no GPU") != std::string::npos);
    }
    CHECK_THROWS_AS(dc::execute_reference_cuda(make_workload("ffnn", workload_params{})), error);
  }
}

// The GPU cases (numerics vs the CPU backend, streams, virtual devices, transfers) are in
// test_cuda_gpu.cpp.
