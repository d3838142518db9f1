#pragma once
/// Planned transfers: how one tensor moves from the device that produced it to every other device that
/// consumes it, when a plain copy per destination would waste links (several destinations share the
/// first links, or no direct link exists). The tensor is cut into equal chunks; each hop moves one chunk
/// across one directed link once the chunk is at the link's source node: devices store and forward
/// (and copy: one received chunk may leave on several links), switches only pass chunks through.
///
/// The simulator executes a plan hop by hop on its links (`sim_options::transfers`); the actor runtime
/// executes its device-to-device legs (switch hops collapsed). Who makes plans is open: the runtime
/// only knows the `transfer_planner` interface; `doppler::comm::multicast_planner` (comm_planner/)
/// plans with the TE-CCL planner. docs/simulator.md, "Planned transfers", has the model.

#include <doppler/runtime/cluster.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace doppler {

/// One chunk across one directed link.
struct transfer_hop {
  std::uint32_t chunk = 0;  ///< 0 .. chunks-1
  link_index link = 0;      ///< directed link of the cluster
  /// The hop that brought this chunk to the link's source node; -1 when that node is the source
  /// device (which holds every chunk from the start).
  std::int32_t after = -1;
  /// The device this hop's leg ends at: the link's destination, or past a switch the device the
  /// chunk is forwarded to.
  device_index toward = 0;
};

/// A device-to-device view of a plan: switch hops collapsed (what the actor runtime executes).
struct transfer_leg {
  std::uint32_t chunk = 0;
  device_index from = 0, to = 0;
  std::int32_t after = -1;  ///< the leg that brought this chunk to `from`; -1 at the source
};

struct transfer_plan {
  device_index source = 0;
  std::vector<device_index> destinations;  ///< sorted, distinct, never the source
  std::uint32_t chunks = 1;
  std::vector<transfer_hop> hops;          ///< topologically ordered: after < own index
  std::string method;                      ///< who planned it (greedy, milp, ...)
  double planned_seconds = 0;              ///< the planner's estimate for the whole tensor
  /// children[off[h] .. off[h+1]): the hops that wait for hop h; roots: hops with after == -1.
  std::vector<std::uint32_t> child_off, children, roots;
  std::vector<transfer_leg> legs;          ///< device-to-device legs (built by finish)

  /// Checks the plan against `c` and builds children/roots/legs: every hop's link starts where its
  /// chunk is (the source device, or the node its `after` hop reached), `after` precedes the hop,
  /// every destination receives every chunk, a switch forwards only what it just received. Throws
  /// `doppler::error` (bad_argument) naming the first bad hop.
  void finish(const cluster& c);
  /// The number of distinct chunk deliveries at device d (= chunks for a destination).
  std::uint32_t chunks_reaching(device_index d) const;
};

/// Plans the movement of `bytes` from `src` to every device in `dsts` (sorted, distinct, not `src`).
/// Returns nullptr to say "copy directly to each destination". Implementations must be safe to call
/// from several threads and should answer quickly (cache); they must not throw for a valid request.
class transfer_planner {
 public:
  virtual ~transfer_planner() = default;
  virtual std::shared_ptr<const transfer_plan> plan(device_index src, std::span<const device_index> dsts,
                                                    double bytes) = 0;
};

/// Whether a tensor going from src to dsts is worth planning: two or more destinations, or one
/// whose route passes through another device.
bool wants_plan(const cluster& c, device_index src, std::span<const device_index> dsts) noexcept;

/// Chunks to cut a tensor of `bytes` into: one per `chunk_bytes` (at least 1, at most `max_chunks`).
std::uint32_t chunk_count(double bytes, double chunk_bytes, std::uint32_t max_chunks) noexcept;

}  // namespace doppler
