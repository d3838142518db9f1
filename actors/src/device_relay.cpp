// The device actor's planned transfers (protocol.hpp, `relay` / `chunk`): a tensor with several
// destinations travels device to device along its transfer plan's legs, chunk by chunk; each device
// on the way copies a chunk into its own copy (host memory, or device memory on a resident backend)
// and forwards it along the legs that wait for it. Plans are process-local (the engine plans only
// runs whose devices all live in its process), so chunk messages carry shared pointers, never bytes.

#include "device_state.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace doppler::actors::device_detail {
namespace {

/// Elements [first, last) of chunk k of a tensor of n elements cut into `chunks` pieces.
std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, std::uint32_t k, std::uint32_t chunks) {
  return {n * k / chunks, n * (k + 1) / chunks};
}

/// Sends leg `leg` of op's planned transfer: its chunk is in `from` (this device's copy).
void send_leg(device_pointer self, op_index i, std::uint32_t leg, const tensor_ref& from) {
  auto& st = self->state;
  const transfer_leg& l = st.plan->planned(i)->legs[leg];
  self->send(st.plan->devices[l.to], chunk_atom::value, st.run, i, leg, from);
}

/// Resident backends: chunk `leg` of op i's planned transfer arrived (`from`: the sender's copy, in
/// its device's memory); this device's copy thread copies the chunk's range into this device's copy
/// (allocated with the first chunk), device to device.
void receive_chunk_held(device_pointer self, op_index i, std::uint32_t leg, tensor_ref from, std::int64_t start) {
  auto& st = self->state;
  const transfer_plan& tp = *st.plan->planned(i);
  auto& in = st.receiving[i];
  if (!in.held) {
    try {
      in.held = st.opt.kernels->allocate_held(st.opt.index, from.shape());
    } catch (const std::exception& e) {
      self->send(st.dispatcher, op_failed_msg{st.run, i, st.opt.index, std::string("planned transfer: ") + e.what()});
      return;
    }
    in.start_ns = start;
  }
  auto [first, last] = chunk_range(from.numel(), tp.legs[leg].chunk, tp.chunks);
  const transfer_leg& l = tp.legs[leg];
  device_actor me = self;
  // As for host chunks: only this copy thread writes `held`, each range once.
  st.copier->post(0, [me, run = st.run, i, leg, first, last, from_dev = l.from, to_dev = l.to,
                      kernels = st.opt.kernels, chunk_bytes = (*st.plan->g)[i].bytes / tp.chunks,
                      src = std::move(from), dst = in.held] {
    auto t0 = now_ns();
    double floor_s = kernels->copy_seconds(from_dev, to_dev, chunk_bytes);
    try {
      if (last > first) kernels->copy_range_held(from_dev, to_dev, src, dst, first, last);
    } catch (const std::exception& e) {
      caf::anon_send(me, op_failed_msg{run, i, to_dev, "planned transfer, chunk from device " +
                                                           std::to_string(from_dev) + ": " + e.what()});
      return;
    }
    hold_until(t0, floor_s);
    caf::anon_send(me, chunk_copied_msg{run, i, leg, t0, now_ns()});
  });
}

}  // namespace

/// Chunk `leg` of op's planned transfer is in this device's copy: forward it along the legs that wait
/// for it, and once every chunk meant for this device is in, keep the tensor (a destination) and report.
void chunk_copied(device_pointer self, const chunk_copied_msg& m) {
  auto& st = self->state;
  const transfer_plan& tp = *st.plan->planned(m.op);
  auto it = st.receiving.find(m.op);
  if (it == st.receiving.end()) return;
  auto& in = it->second;
  tensor_ref copy = st.resident ? in.held : tensor_ref{in.copy, nullptr};
  for (std::uint32_t k = 0; k < tp.legs.size(); ++k)
    if (tp.legs[k].after == static_cast<std::int32_t>(m.leg)) send_leg(self, m.op, k, copy);
  if (++in.got < tp.chunks_reaching(st.opt.index)) return;
  if (std::binary_search(tp.destinations.begin(), tp.destinations.end(), st.opt.index)) {
    std::uint64_t bytes = copy.bytes();
    std::uint32_t e = st.remote_entry(m.op);
    if (e != UINT32_MAX) st.store(st.sl->remote_slot[e], std::move(copy), st.sl->remote_uses[e]);
    st.arrived.push_back(transfer_done_msg{m.run, m.op, tp.source, st.opt.index, in.start_ns, m.end_ns, bytes});
    st.receiving.erase(it);
    if (st.self_release && e != UINT32_MAX) release_remote_successors(self, e);
    return;
  }
  st.receiving.erase(it);
}

void receive_chunk(device_pointer self, op_index i, std::uint32_t leg, tensor_ref from) {
  auto& st = self->state;
  const transfer_plan* tp = st.plan->planned(i);
  if (!tp || leg >= tp->legs.size()) return;
  auto& in = st.receiving[i];
  auto start = now_ns();
  if (st.resident) return receive_chunk_held(self, i, leg, std::move(from), start);
  if (!from.ptr) from.ptr = from.host();  // a host backend cuts chunks from host memory
  if (!in.copy) {
    in.copy = from.ptr->empty() ? std::make_shared<tensor>() : std::make_shared<tensor>(from.ptr->shape());
    in.start_ns = start;
  }
  auto [first, last] = chunk_range(from.ptr->numel(), tp->legs[leg].chunk, tp->chunks);
  const std::uint64_t run = st.run;
  if (st.opt.kernels->runs_inline()) {  // null backend: nothing worth a copy thread
    std::copy(from.ptr->data() + first, from.ptr->data() + last, in.copy->data() + first);
    return chunk_copied(self, chunk_copied_msg{run, i, leg, start, now_ns()});
  }
  device_actor me = self;
  const transfer_leg& l = tp->legs[leg];
  // Only this device's copy thread writes `copy`, each range once; readers (the next legs) see a
  // range after its chunk_copied message, so no range is read while written.
  st.copier->post(0, [me, run, i, leg, first, last, from_dev = l.from, to_dev = l.to, kernels = st.opt.kernels,
                      chunk_bytes = (*st.plan->g)[i].bytes / tp->chunks, src = std::move(from.ptr), dst = in.copy] {
    auto t0 = now_ns();
    double floor_s = kernels->copy_seconds(from_dev, to_dev, chunk_bytes);
    if (last > first) std::memcpy(dst->data() + first, src->data() + first, (last - first) * sizeof(float));
    hold_until(t0, floor_s);
    caf::anon_send(me, chunk_copied_msg{run, i, leg, t0, now_ns()});
  });
}

/// Starts the planned transfer of op i's output (held here): the legs that leave the source.
bool start_relay(device_pointer self, op_index i) {
  auto& st = self->state;
  const transfer_plan* tp = st.plan->planned(i);
  const std::uint32_t s = st.slot_of(i);
  if (!st.holds(s) || !tp) {
    self->send(st.dispatcher, op_failed_msg{st.run, i, st.opt.index,
                                            "planned transfer of an output this device does not hold"});
    return false;
  }
  for (std::uint32_t k = 0; k < tp->legs.size(); ++k)
    if (tp->legs[k].after < 0) send_leg(self, i, k, st.value(s));
  for (std::size_t k = 0; k < tp->destinations.size(); ++k) st.release_use(s);
  return true;
}

}  // namespace doppler::actors::device_detail
