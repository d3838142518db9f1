// The CPU backend's dispatch (op → kernel), the reference executor and the kernel timer.
#include <doppler/runtime/cpu_backend.hpp>
#include <doppler/runtime/error.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <numeric>

namespace doppler {

namespace {

/// Physical memory of this host in bytes (sysconf), or +inf where unknown.
double host_memory() {
  static const double bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? double(pages) * double(size) : std::numeric_limits<double>::infinity();
  }();
  return bytes;
}

std::string fmt_bytes(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GB", b / 1e9);
  return buf;
}

}  // namespace

shape_t output_shape(const graph& g, op_index i) {
  const op& o = g[i];
  if (!o.shape.empty() || o.kind != op_kind::synthetic) return o.shape;
  const double elem = static_cast<double>(size_of(g.element_type()));
  const double n = std::ceil(o.bytes / elem);
  // Past 2^62 elements the cast to int64 wrapped negative, and the memory check let it through.
  if (!(n <= 0x1p62))
    throw error(errc::infeasible, "op `" + o.id + "`: its output of " + fmt_bytes(o.bytes) +
                                      " does not fit in any host's memory");
  return {static_cast<std::int64_t>(n)};
}

tensor execute_op(const graph& g, op_index i, std::span<const tensor* const> in, std::uint64_t seed) {
  const op& o = g[i];
  if (in.size() != o.inputs.size())
    throw error(errc::bad_argument, "op `" + o.id + "` (" + std::string(to_string(o.kind)) + ") takes " +
                                        std::to_string(o.inputs.size()) + " inputs, got " + std::to_string(in.size()));
  for (std::size_t a = 0; a < in.size(); ++a) {
    if (in[a] == nullptr)
      throw error(errc::bad_argument, "op `" + o.id + "`: input " + std::to_string(a) + " is null");
    shape_t want = output_shape(g, o.inputs[a]);
    if (in[a]->shape() != want)
      throw error(errc::shape_mismatch, "op `" + o.id + "`: input " + std::to_string(a) + " (`" +
                                            g[o.inputs[a]].id + "`) has shape " + to_string(in[a]->shape()) +
                                            ", expected " + to_string(want));
  }
  // An output larger than the host's physical memory is refused up front (the DOPPLER paper's
  // synthetic graphs declare terabytes per op); a failed allocation below is reported the same way.
  const shape_t out_shape = output_shape(g, i);
  const double out_bytes = numel(out_shape) * static_cast<double>(sizeof(float));
  auto too_big = [&] {
    return error(errc::infeasible, "op `" + o.id + "`: its output of " + fmt_bytes(out_bytes) +
                                       " (as f32) does not fit in this host's memory (" + fmt_bytes(host_memory()) + ")");
  };
  if (out_bytes > host_memory()) throw too_big();
  const op_attrs& at = o.attrs;
  try {
    switch (o.kind) {
      case op_kind::input: return make_input(o.id, o.shape, seed);
      case op_kind::matmul: return cpu::matmul(*in[0], *in[1]);
      case op_kind::add: return cpu::add(*in[0], *in[1]);
      case op_kind::mul: return cpu::mul(*in[0], *in[1]);
      case op_kind::silu: return cpu::silu(*in[0]);
      case op_kind::gelu: return cpu::gelu(*in[0]);
      case op_kind::exp: return cpu::exp(*in[0]);
      case op_kind::scale: return cpu::scale(*in[0], at.factor);
      case op_kind::softmax: return cpu::softmax(*in[0]);
      case op_kind::rmsnorm: return cpu::rmsnorm(*in[0], *in[1]);
      case op_kind::rope: return cpu::rope(*in[0], at.base);
      case op_kind::transpose: return cpu::transpose(*in[0], at.perm);
      case op_kind::concat: return cpu::concat(in, at.axis);
      case op_kind::slice: return cpu::slice(*in[0], at.axis, at.start, at.end);
      case op_kind::reduce_sum: return cpu::reduce_sum(in);
      case op_kind::synthetic: return cpu::synthetic(o.flops, out_shape, op_seed(seed, o.id));
    }
  } catch (const error& e) {
    throw error(e.code(), "op `" + o.id + "`: " + e.reason());
  } catch (const std::bad_alloc&) {
    throw too_big();
  }
  throw error(errc::internal, "op `" + o.id + "`: unhandled kind");
}

// ---- reference executor ------------------------------------------------------------------------

std::vector<tensor> execute_reference(const graph& g, const reference_options& opt) {
  std::vector<tensor> out(g.size());
  // Remaining consumers per op (distinct successors), to release outputs when keep_all is off.
  std::vector<std::uint32_t> pending(g.size());
  for (op_index i = 0; i < g.size(); ++i) pending[i] = static_cast<std::uint32_t>(g.succs(i).size());
  std::vector<const tensor*> args;
  for (op_index i : g.topo_order()) {
    const op& o = g[i];
    args.clear();
    for (op_index p : o.inputs) args.push_back(&out[p]);
    auto run = [&] { return execute_op(g, i, args, opt.seed); };
    out[i] = opt.timer ? opt.timer->time(i, run) : run();
    if (!opt.keep_all)
      for (op_index p : g.preds(i))
        if (--pending[p] == 0) out[p] = tensor{};
  }
  return out;
}

std::vector<tensor> execute_reference(const graph& g, std::uint64_t seed) {
  return execute_reference(g, reference_options{}.with_seed(seed));
}

// ---- kernel_timer ------------------------------------------------------------------------------

void kernel_timer::record(op_index i, double seconds) {
  if (i >= seconds_.size()) {
    seconds_.resize(std::size_t(i) + 1, 0.0);
    runs_.resize(std::size_t(i) + 1, 0);
  }
  seconds_[i] += seconds;
  runs_[i] += 1;
}

double kernel_timer::total() const noexcept { return std::accumulate(seconds_.begin(), seconds_.end(), 0.0); }

std::array<double, op_kind_count> kernel_timer::per_kind(const graph& g) const {
  std::array<double, op_kind_count> k{};
  for (op_index i = 0; i < seconds_.size() && i < g.size(); ++i) k[static_cast<std::size_t>(g[i].kind)] += seconds_[i];
  return k;
}

void kernel_timer::clear() noexcept {
  seconds_.clear();
  runs_.clear();
}

}  // namespace doppler
