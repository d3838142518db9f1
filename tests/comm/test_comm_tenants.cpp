// Several jobs at once (joint vs alone vs first-come-first-served) and re-planning from a previous plan.
#include "comm_fixtures.hpp"

#include <doppler/comm/planner.hpp>
#include <doppler/comm/tenants.hpp>

#include <algorithm>

using namespace doppler;
using namespace doppler::comm;
using namespace comm_fixtures;

TEST_CASE("two tenants on a DGX-1: joint planning beats first-come-first-served") {
  cluster c = make_preset("dgx1-v100");
  demand a = make_collective(c, collective::allgather, 1 << 20, 1);
  demand b = make_collective(c, collective::broadcast, 1 << 20, 2, 5);
  demand both = merge_jobs({a, b}, {1.0, 1.0});
  plan_options o;
  o.with_method(have_solvers() ? "milp" : "greedy").with_time_limit(10);
  tenant_comparison t = compare_tenants(c, both, o);
  REQUIRE(t.jobs.size() == 2);
  for (const tenant_outcome& j : t.jobs) {
    CHECK(j.alone_epochs <= j.joint_epochs);  // alone is the idle-network reference
    CHECK(j.alone_epochs <= j.fcfs_epochs);
  }
  CHECK(t.jobs[0].fcfs_epochs == t.jobs[0].alone_epochs);  // the first job sees an idle network
  CHECK(t.joint.report.epochs_used <= t.fcfs.epochs);      // the network's makespan
  CHECK(t.weighted_alone <= t.weighted_joint);
  if (have_solvers()) CHECK(t.weighted_joint <= t.weighted_fcfs);
}

TEST_CASE("re-planning keeps the old sends and plans only the new job") {
  cluster c = make_preset("dgx1-v100");
  demand a = make_collective(c, collective::allgather, 1 << 20, 1);
  demand b = make_collective(c, collective::broadcast, 1 << 20, 1, 3);
  plan_result first = plan(c, merge_jobs({a}, {1.0}), plan_options{}.with_method("greedy"));
  demand both = merge_jobs({a, b}, {1.0, 1.0});
  plan_options o;
  o.with_method("greedy");
  o.warm_start = &first.sched;
  plan_result again = plan(c, both, o);
  CHECK(again.sched.note.find("kept " + std::to_string(first.sched.sends.size()) + " sends of 8 chunks") != std::string::npos);
  // Every old send survives unchanged.
  for (const send& x : first.sched.sends)
    CHECK(std::find(again.sched.sends.begin(), again.sched.sends.end(), x) != again.sched.sends.end());
  // A job leaving: its sends are dropped, the rest stays valid.
  plan_options back;
  back.with_method("greedy");
  back.warm_start = &again.sched;
  plan_result fewer = plan(c, merge_jobs({a}, {1.0}), back);
  CHECK(fewer.sched.sends.size() == first.sched.sends.size());
  // With the MILP the kept sends plus a greedy plan of the new chunks seed the joint MILP.
  if (have_solvers()) {
    plan_options m;
    m.with_method("milp").with_time_limit(10);
    m.warm_start = &first.sched;
    plan_result warm = plan(c, both, m);
    CHECK(warm.sched.method == "milp+warm");
    CHECK(warm.sched.note.find("MIP start from") != std::string::npos);
    CHECK(warm.sched.epochs <= again.sched.epochs);
  }
  // Methods that cannot plan around fixed sends say so.
  std::vector<send> fixed = first.sched.sends;
  plan_options ring;
  ring.with_method("ring");
  ring.fixed_sends = &fixed;
  expect_error([&] { plan(c, a, ring); }, errc::bad_argument, "supports the greedy, milp and auto methods");
}
