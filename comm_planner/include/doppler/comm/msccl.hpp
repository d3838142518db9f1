#pragma once
/// Export of a schedule to MSCCL's XML algorithm format (`<algo><gpu><tb><step/></tb></gpu></algo>`),
/// the format the MSCCL runtime of NCCL/RCCL executes.

#include <doppler/comm/demand.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/schedule.hpp>

#include <string>

namespace doppler::comm {

struct msccl_options {
  std::string name = "doppler";
  std::string collective = "allgather";  ///< the `coll` attribute
  std::string proto = "Simple";
  int max_steps_per_tb = 256;  ///< MSCCL_MAX_NUM_STEPS
};

/// One thread block per (GPU, send peer) and per (GPU, receive peer), steps in epoch order; a send
/// of a relayed chunk depends (depid/deps) on the receive that brought it; hops through a switch
/// become direct GPU-to-GPU sends (the switch is transparent to MSCCL). Output-buffer offsets are
/// demand chunk indices; chunks a GPU only relays live in its scratch buffer. Throws bad_argument
/// when a thread block would exceed `max_steps_per_tb`.
std::string to_msccl_xml(const network& net, const demand& d, const schedule& s, const msccl_options& opt = {});

}  // namespace doppler::comm
