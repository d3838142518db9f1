// Re-planning at an epoch t0: the old plan's sends before t0 stay, the rest is planned from the
// state at t0 (greedy from a partial state, the old plan as a hint, the MILP when it helps).
#include "comm_fixtures.hpp"

#include <doppler/comm/planner.hpp>
#include <doppler/comm/tenants.hpp>

#include <algorithm>

using namespace doppler;
using namespace doppler::comm;
using namespace comm_fixtures;

namespace {

/// Every send of `old` before t0 is in `now`, and `now` has no other send before t0.
void check_history(const schedule& old, const schedule& now, std::int32_t t0) {
  std::size_t before = 0;
  for (const send& x : old.sends)
    if (x.epoch < t0) {
      ++before;
      CHECK_MESSAGE(std::find(now.sends.begin(), now.sends.end(), x) != now.sends.end(),
                    "send of chunk " << x.chunk << " at epoch " << x.epoch << " lost");
    }
  std::size_t now_before = 0;
  for (const send& x : now.sends) now_before += x.epoch < t0;
  CHECK(now_before == before);
}

}  // namespace

TEST_CASE("greedy from a partial state: a line of 3, a job joins at epoch 1") {
  // gpu0 - gpu1 - gpu2. Old plan: chunk 0 broadcast from gpu0 (0→1 at 0, 1→2 at 1: 2 epochs).
  // At t0 = 1 a broadcast from gpu2 joins: gpu1 already holds chunk 0 (history: 0→1 at 0); chunk 0
  // still goes 1→2 at epoch 1, chunk 1 goes 2→1 at 1 and 1→0 at 2: 3 epochs = the state's bound.
  cluster c = line(3);
  demand a = make_collective(c, collective::broadcast, mb, 1, 0);
  demand b = make_collective(c, collective::broadcast, mb, 1, 2);
  plan_result first = plan(c, merge_jobs({a}, {1.0}), plan_options{}.with_method("greedy"));
  REQUIRE(first.sched.epochs == 2);
  demand both = merge_jobs({a, b}, {1.0, 1.0});
  plan_options o;
  o.with_method("greedy").with_replan(first.sched, 1);
  plan_result r = plan(c, both, o);
  CHECK(r.sched.epochs == 3);
  CHECK(r.bound.epochs == 3);
  CHECK(r.sched.proved_optimal);
  CHECK(r.sched.replan_epoch == 1);
  CHECK(r.sched.method == "greedy+warm");
  check_history(first.sched, r.sched, 1);
}

TEST_CASE("greedy from a partial state: a one-way ring of 4, rarity before the old plan's hint") {
  // gpu0 → gpu1 → gpu2 → gpu3 → gpu0. Old plan: chunk 0 broadcast from gpu0 (0→1, 1→2, 2→3 at
  // epochs 0, 1, 2). At t0 = 2 a broadcast from gpu2 joins; gpu2 holds both chunks and 2→3 carries
  // one per epoch. Following the old plan's next send (chunk 0 on 2→3 at 2) first, chunk 1 would
  // reach gpu1 at 6; the old plan only breaks ties, so chunk 1 (rarest) goes first: 2→3 at 2, 3→0
  // at 3, 0→1 at 4 → 5 epochs, chunk 0 reaches gpu3 at 4. Bound from the state: chunk 1 is 3 hops
  // from gpu1 at epoch 2 → 5; the first (warm) pass meets it, nothing else runs.
  cluster c = ring(4, false);
  demand a = make_collective(c, collective::broadcast, mb, 1, 0);
  demand b = make_collective(c, collective::broadcast, mb, 1, 2);
  plan_result first = plan(c, merge_jobs({a}, {1.0}), plan_options{}.with_method("greedy"));
  REQUIRE(first.sched.epochs == 3);
  demand both = merge_jobs({a, b}, {1.0, 1.0});
  plan_options o;
  o.with_method("greedy").with_replan(first.sched, 2);
  plan_result r = plan(c, both, o);
  CHECK(r.bound.epochs == 5);
  CHECK(r.sched.epochs == 5);
  CHECK_MESSAGE(r.sched.note.find("(warm greedy from the state 5; bound 5)") != std::string::npos, r.sched.note);
  check_history(first.sched, r.sched, 2);
  // Nothing may start before t0: at t0 = 3 the history is the whole old plan, chunk 1 starts at 3.
  o.replan_epoch = 3;
  plan_result late = plan(c, both, o);
  CHECK(late.sched.epochs == 6);
  check_history(first.sched, late.sched, 3);
}

TEST_CASE("a re-plan at t0 keeps every send before t0 and meets every demand (DGX-1, every method)") {
  cluster c = make_preset("dgx1-v100");
  demand a = make_collective(c, collective::allgather, 1 << 20, 2);
  plan_result first = plan(c, merge_jobs({a}, {1.0}), plan_options{}.with_method("greedy"));
  demand both = merge_jobs({a, make_collective(c, collective::broadcast, 1 << 20, 8, 3)}, {1.0, 1.0});
  for (std::string m : {"greedy", "auto", "milp"}) {
    if (m != "greedy" && !have_solvers()) continue;
    for (std::int32_t t0 : {1, 2, 3}) {
      if (m != "greedy" && t0 != 2) continue;  // the solvers once (time)
      CAPTURE(m);
      CAPTURE(t0);
      plan_options o;
      o.with_method(m).with_time_limit(0.3).with_replan(first.sched, t0);
      plan_result r = plan(c, both, o);  // validated inside: every (chunk, destination) is met
      check_history(first.sched, r.sched, t0);
      CHECK(r.report.epochs_used == r.sched.epochs);
      CHECK(r.sched.epochs >= r.bound.epochs);
      CHECK(r.bound.epochs > t0);
      // The schedule file carries t0 and reads back.
      schedule back = parse_schedule(to_json_text(r.sched, c), c);
      CHECK(back.replan_epoch == t0);
    }
  }
  // A job leaving at t0: its sends before t0 are dropped (not in the demand), the rest stays valid.
  plan_options o;
  o.with_method("greedy").with_replan(first.sched, 2);
  plan_result joined = plan(c, both, o);
  o.warm_start = &joined.sched;
  o.replan_epoch = 3;
  plan_result left = plan(c, merge_jobs({a}, {1.0}), o);
  for (const send& x : left.sched.sends) CHECK(x.chunk < a.chunks.size());
  // Methods that cannot start from a state say so.
  plan_options lp;
  lp.with_method("ring").with_replan(first.sched, 1);
  expect_error([&] { plan(c, a, lp); }, errc::bad_argument, "supports the greedy, auto and milp methods");
}

TEST_CASE("above the bound, milp re-plans with the MILP from the state at t0") {
  if (!have_solvers()) return;
  // DGX-1 allgather, 1 chunk per GPU: greedy takes 4 epochs, the bound is 3. Re-planned at t0 = 1
  // from greedy's plan (its epoch-0 sends kept) the greedy passes stay at 4; the MILP from the
  // state, placing only sends from epoch 1 on around the history, proves 3 infeasible there: 4 is
  // minimal given what happened. At t0 = 0 (nothing happened yet) it finds 3.
  cluster c = make_preset("dgx1-v100");
  demand a = make_collective(c, collective::allgather, 1 << 20, 1);
  plan_result first = plan(c, a, plan_options{}.with_method("greedy"));
  REQUIRE(first.sched.epochs == 4);
  plan_options g;
  g.with_method("greedy").with_replan(first.sched, 1);
  plan_result greedy = plan(c, a, g);
  plan_options m;
  m.with_method("milp").with_time_limit(5).with_replan(first.sched, 1);
  plan_result r = plan(c, a, m);
  check_history(first.sched, r.sched, 1);
  CHECK(r.sched.epochs <= greedy.sched.epochs);
  CHECK(r.sched.epochs >= r.bound.epochs);
  CHECK_MESSAGE(r.sched.note.find("from the state at epoch 1: milp downward search") != std::string::npos, r.sched.note);
  CHECK(r.sched.epochs == 4);
  CHECK(r.sched.proved_optimal);
  m.replan_epoch = 0;
  plan_result r0 = plan(c, a, m);
  CHECK(r0.sched.epochs == 3);
  CHECK(r0.sched.proved_optimal);
  CHECK_MESSAGE(r0.sched.note.find("kept the milp from the state") != std::string::npos, r0.sched.note);
}

TEST_CASE("re-planning at t0 = 0 is never worse than planning cold (the replan benchmark's cases)") {
  // A job joins a DGX-1 allgather (2 chunks per GPU) before it starts: warm (from the old plan)
  // takes no more epochs than the joint plan from scratch, greedy and auto.
  cluster c = make_preset("dgx1-v100");
  demand a = make_collective(c, collective::allgather, 1 << 20, 2);
  plan_result first = plan(c, merge_jobs({a}, {1.0}), plan_options{}.with_method("greedy"));
  const std::vector<demand> jobs{make_collective(c, collective::gather, 1 << 20, 4, 5),
                                 make_collective(c, collective::scatter, 1 << 20, 4, 0),
                                 make_collective(c, collective::broadcast, 1 << 20, 8, 3)};
  for (const demand& j : jobs) {
    CAPTURE(j.name);
    demand both = merge_jobs({a, j}, {1.0, 1.0});
    plan_result cold = plan(c, both, plan_options{}.with_method("greedy"));
    plan_options o;
    o.with_method("greedy").with_replan(first.sched, 0);
    plan_result warm = plan(c, both, o);
    CHECK(warm.sched.epochs <= cold.sched.epochs);
    if (have_solvers()) {
      plan_options oa;
      oa.with_method("auto").with_time_limit(0.5).with_replan(first.sched, 0);
      plan_result wa = plan(c, both, oa);
      CHECK(wa.sched.epochs <= cold.sched.epochs);
      CHECK(wa.sched.epochs <= warm.sched.epochs);
    }
  }
}
