#include "control/ledgers.h"

#include "control/job_cost.h"

namespace baton::control {

Ledgers::Ledgers(Shared shared) : shared_(shared), usage_(shared.policy.fairshare_half_life) {}

void Ledgers::Restore(TimePoint now) {
  usage_.Advance(now);
  for (const auto& [id, j] : shared_.jobs) {
    // A running job is charged from the pass that placed it until it leaves `running`,
    // whether or not its start was reported: the charge must match what leaving takes off.
    if (j.state == JobState::kRunning)
      usage_.AddRate(j.spec.project, j.user, j.spec.resources.milli_gpus);
    if (!j.started_at) continue;
    TimePoint end = j.finished_at.value_or(now);
    usage_.AddPast(j.spec.project, j.user, j.spec.resources.milli_gpus, *j.started_at, end);
  }
  for (const auto& [id, j] : shared_.jobs) {
    if (!IsTerminal(j.state)) budgets_.AttemptClosed(j.spec.project, j.cost_micros);
  }
  // Alerts a budget had reached before the restart are not sent again.
  RecountBudgets(now, true);
}

void Ledgers::PolicyChanged(TimePoint now) {
  usage_.Advance(now);
  usage_.SetHalfLife(shared_.policy.fairshare_half_life);
  RecountBudgets(now, false);
}

void Ledgers::Started(const Job& job, TimePoint now) {
  usage_.Advance(now);
  usage_.AddRate(job.spec.project, job.user, job.spec.resources.milli_gpus);
}

void Ledgers::Stopped(Job& job, TimePoint now) {
  usage_.Advance(now);
  usage_.AddRate(job.spec.project, job.user, -job.spec.resources.milli_gpus);
  if (job.started_at && now > *job.started_at) job.gpu_seconds += AttemptService(job, now);
  int64_t cost = AttemptCost(job, now);
  job.cost_micros += cost;
  budgets_.AttemptClosed(job.spec.project, cost);
  utilization_.Close(job);
}

void Ledgers::Ended(const Job& job) { budgets_.JobEnded(job.spec.project, job.cost_micros); }

void Ledgers::Track(const std::string& project, TimePoint now) {
  budgets_.Track(shared_.policy, project, now);
}

Status Ledgers::Allows(const std::string& project, TimePoint now) const {
  return budgets_.Allows(shared_.policy, project, now);
}

std::vector<ClusterEvent> Ledgers::CheckBudgets(TimePoint now) {
  // Every tick: most clusters have no budget, and then nothing walks the running jobs.
  if (budgets_.empty()) return {};
  return budgets_.Check(
      shared_.policy, shared_.jobs,
      RunningCostByProject(shared_.running, budgets_, shared_.node_costs, shared_.policy, now),
      now);
}

void Ledgers::RecountBudgets(TimePoint now, bool quiet) {
  // Every project's: the recount may give a budget to a project that had none.
  budgets_.Recount(shared_.policy, shared_.jobs,
                   RunningCostByProject(shared_.running, budgets_, shared_.node_costs,
                                        shared_.policy, now, true),
                   now, quiet);
}

}  // namespace baton::control
