#pragma once
/// Umbrella header of doppler::comm, the traffic-engineering comm planner: demands and schedules
/// (`doppler-demand/1`, `doppler-schedule/1`), the time-expanded network, the validator and
/// simulator, lower bounds, the planning methods, tenants and re-planning, MSCCL export, topologies.

#include <doppler/comm/bounds.hpp>
#include <doppler/comm/demand.hpp>
#include <doppler/comm/msccl.hpp>
#include <doppler/comm/network.hpp>
#include <doppler/comm/planner.hpp>
#include <doppler/comm/schedule.hpp>
#include <doppler/comm/tenants.hpp>
#include <doppler/comm/topologies.hpp>
#include <doppler/comm/validate.hpp>
