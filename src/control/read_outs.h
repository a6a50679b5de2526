// What users read of the controller's state: a job (with its place in the queue and the
// factors of its priority), pages of jobs and of the queue, the nodes, cluster events, GET
// /metrics, usage, a job's metrics, tokens, recurring jobs and the model catalog. Each answer is
// a function of the controller's parts and `now`; the Controller lends them read-only
// (Controller::Read) for each read command, and nothing here changes them.
#pragma once

#include <map>

#include "control/account_numbers.h"
#include "control/attempt_utilization.h"
#include "control/budget_book.h"
#include "control/commands.h"
#include "control/cron_book.h"
#include "control/dependency_gate.h"
#include "control/event_ring.h"
#include "control/job_tally.h"
#include "control/node_ledger.h"
#include "control/node_table.h"
#include "control/running_jobs.h"
#include "control/token_book.h"
#include "core/policy.h"
#include "sched/cluster_view.h"
#include "sched/fair_share.h"
#include "sched/job_queue.h"
#include "sched/ordering.h"

namespace baton::control {

// Job `id`; with array_index >= 0, task `array_index` of array `id`.
const Job* FindJob(const std::map<JobId, Job>& jobs, JobId id, int array_index = -1);
// A copy of `job` as users see it at `now`: its running attempt's cost included.
Job JobAsShown(const Job& job, TimePoint now);

class Autoscaler;

struct ReadOuts {
  const Policy& policy;
  const std::map<JobId, Job>& jobs;
  const sched::JobQueue& queue;
  const DependencyGate& gate;
  const RunningJobs& running;
  const NodeTable& nodes;
  const sched::ClusterView& view;
  const sched::UsageLedger& usage;
  const EventRing& events;
  const TokenBook& tokens;
  const Counters& counters;
  const JobTally& tally;  // jobs by state, projects' ended attempts (GET /metrics)
  const CronBook& crons;
  const BudgetBook& budgets;
  const AttemptUtilization& utilization;
  // The passes' numbers: a waiting job's factors are shown as a pass counts them.
  AccountNumbers& numbers;
  const Autoscaler* scaling = nullptr;     // autoscaling's nodes and their states (none: none)
  const NodeLedger* node_costs = nullptr;  // what autoscaled nodes cost (none: nothing)

  Result<JobDetail> Get(const GetJob& c, TimePoint now) const;
  JobPage List(const ListJobs& c, TimePoint now) const;
  Result<JobMetrics> Metrics(const GetJobMetrics& c, TimePoint now) const;
  QueuePage Queue(const GetQueue& c) const;
  NodeList Nodes() const;
  EventList Events(const GetEvents& c) const;
  MetricsShown Metrics(TimePoint now) const;
  UsageReport Usage(const GetUsage& c, TimePoint now) const;
  TokenList Tokens(const ListTokens& c) const;
  CronList Crons(const ListCrons& c, TimePoint now) const;
  // Recurring job `series` as listed.
  CronEntry Cron(JobId series, TimePoint now) const;
  ModelList Models() const;

 private:
  // Fills in the factors a pass leaves out where the policy does not weigh them (the
  // fair-share factor), from the usage now.
  void ShowFactors(QueueFactors& f, const Job& job, sched::ShownFairShare& shown) const;
};

}  // namespace baton::control
