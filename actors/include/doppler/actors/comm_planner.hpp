#pragma once
/// The comm-planner actor (protocol.hpp, `comm_planner_actor`): the comm planner of comm_planner/ on
/// one topology, behind a typed protocol. It answers from its cache in microseconds; a request it has
/// not seen is planned at once with the fast method (greedy by default) so no run waits on a solver,
/// and, when a slower `refine` method is configured (milp, auto, ...), that method runs on a detached
/// thread within its time limit and replaces the cached plan when it is faster. Later runs get the
/// refined plan.

#include <doppler/actors/protocol.hpp>
#include <doppler/comm/multicast.hpp>

#include <caf/all.hpp>

#include <memory>
#include <string>

namespace doppler::actors {

struct comm_planner_config {
  comm::multicast_options multicast;  ///< method for a miss, chunking, solver time limit
  std::string refine;                 ///< background method ("" = none)
};

comm_planner_actor spawn_comm_planner(caf::actor_system& sys, std::shared_ptr<const cluster> c,
                                      comm_planner_config cfg = {});

}  // namespace doppler::actors
