// Multi-tenant planning: joint vs alone vs first-come-first-served.
#include <doppler/comm/tenants.hpp>
#include <doppler/runtime/error.hpp>

#include <algorithm>

namespace doppler::comm {

namespace {

demand job_part(const demand& d, std::uint32_t j) {
  demand part;
  part.name = d.jobs[j].name;
  part.chunk_bytes = d.chunk_bytes;
  part.output_bytes = d.output_bytes;
  for (const chunk& c : d.chunks)
    if (c.job == j) part.chunks.push_back(c);
  return part;
}

/// Completion epoch per job from per-chunk completion epochs.
std::vector<std::int32_t> per_job(const demand& d, const std::vector<std::int32_t>& chunk_epochs) {
  std::vector<std::int32_t> out(d.jobs.size(), 0);
  for (std::size_t i = 0; i < d.chunks.size(); ++i)
    out[d.chunks[i].job] = std::max(out[d.chunks[i].job], chunk_epochs[i]);
  return out;
}

}  // namespace

tenant_comparison compare_tenants(const cluster& c, const demand& d, const plan_options& opt) {
  if (d.jobs.size() < 2) throw error(errc::bad_argument, "tenant comparison needs a demand with at least 2 jobs");
  tenant_comparison t;
  t.joint = plan(c, d, opt);
  auto joint = per_job(d, t.joint.report.chunk_epochs);
  std::vector<send> fcfs;
  plan_options o = opt;
  if (o.method != "milp" && o.method != "greedy") o.method = "greedy";
  for (std::uint32_t j = 0; j < d.jobs.size(); ++j) {
    demand part = job_part(d, j);
    tenant_outcome r;
    r.job = d.jobs[j].name;
    r.weight = d.jobs[j].weight;
    r.joint_epochs = joint[j];
    r.alone_epochs = plan(c, part, opt).report.epochs_used;
    o.fixed_sends = &fcfs;
    plan_result p = plan(c, part, o);
    fcfs.insert(fcfs.end(), p.sched.sends.begin(), p.sched.sends.end());
    t.jobs.push_back(r);
  }
  network net(c, d.chunk_bytes, opt.tau_mode, opt.tau, opt.removed_links);
  t.fcfs = t.joint.sched;
  t.fcfs.method = "fcfs-" + o.method;
  t.fcfs.sends = fcfs;
  canonicalize(t.fcfs);
  t.fcfs.epochs = unreachable_epochs;  // set from the replay below
  replay_report rep = validate_schedule(net, d, t.fcfs, {.switch_copy = opt.switch_copy});
  t.fcfs.epochs = rep.epochs_used;
  t.fcfs.transfer_seconds = rep.transfer_seconds;
  auto fc = per_job(d, rep.chunk_epochs);
  for (std::size_t j = 0; j < t.jobs.size(); ++j) {
    t.jobs[j].fcfs_epochs = fc[j];
    t.weighted_joint += t.jobs[j].weight * t.jobs[j].joint_epochs;
    t.weighted_alone += t.jobs[j].weight * t.jobs[j].alone_epochs;
    t.weighted_fcfs += t.jobs[j].weight * t.jobs[j].fcfs_epochs;
  }
  return t;
}

}  // namespace doppler::comm
