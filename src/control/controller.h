// The controller: a deterministic state machine over jobs and nodes. Commands go in through
// Apply (each answered at once), EndBatch closes a batch of them (scheduling, orders for the
// agents) and returns the Effects the caller must carry out: make the store batch durable,
// then send the replies and deliveries. Time is always a parameter; nothing here reads a
// clock, does I/O or starts a thread. One owner calls it; it is not thread-safe.
// control::RunBatch (batch.h) is the one way to drive it.
//
// It owns the jobs and their runs, the scheduler's view, and these parts:
//   nodes_   (NodeDesk,        node_desk.h):   the nodes, their agents, drains, silent nodes
//                                              and fences, the known nodes, the nodes' slots;
//   queue_   (sched::JobQueue, job_queue.h):   the waiting jobs and the planning of passes;
//   ledgers_ (Ledgers,         ledgers.h):     what attempts are charged: fair-share usage,
//                                              budgets, GPU readings;
//   events_  (EventRing,       event_ring.h):  the latest cluster events;
//   tokens_  (TokenBook,       token_book.h):  the API tokens' records;
//   gate_    (DependencyGate,  dependency_gate.h): pending jobs held back, and why;
//   idle_sessions_ (IdleSessions, idle_sessions.h): idle sessions' clocks and verdicts;
//   counters_ (Counters,       metrics.h):     what GET /metrics counts since the start;
//   crons_   (CronBook,        cron_book.h):   recurring jobs' series and the runs owed;
//   keys_    (IdempotencyKeys, idempotency_keys.h): submits' keys and the jobs they made;
//   numbers_ (AccountNumbers,  account_numbers.h): a pass's numbers for accounts and pools;
//   failure_alerts_ (FailureAlerts, failure_alerts.h): job_failed alerts, an array's as one;
//   blame_   (LaunchBlame,     launch_blame.h): launch failures proven elsewhere, and drains;
//   passes_  (PassDriver,      pass_driver.h): a pass's input and run, the last claims;
//   scaling_ (Autoscaler,      autoscaler.h):  autoscaling's nodes, scans and provider calls;
//   node_costs_ (NodeLedger,   node_ledger.h): what autoscaled nodes cost, and whose it is.
// Read commands are answered by ReadOuts (read_outs.h) over the parts, lent read-only; token
// commands by the TokenBook; what a job uses and costs is job_cost.h's; what a spec must meet
// at submit and the job it drafts are admission.h's, and a spec that names a model is sized by
// model_sizing.h; a tunnel's order and an idle session's words are session_orders.h's; what a
// job's metric and checkpoint events record is job_events.h's.
// controller.cc: restore, users' commands, job bookkeeping; controller_schedule.cc: what a
// pass's result does; controller_runs.cc: launches, stops and ends; controller_agents.cc:
// what agents say of jobs, lost nodes' jobs, the tick; controller_waiting.cc: dependencies,
// begin times, array throttles; controller_crons.cc: recurring jobs; controller_sessions.cc:
// idle sessions; controller_update.cc: updates.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/account_numbers.h"
#include "control/autoscaler.h"
#include "control/commands.h"
#include "control/controller_options.h"
#include "control/cron_book.h"
#include "control/dependency_gate.h"
#include "control/event_ring.h"
#include "control/failure_alerts.h"
#include "control/idempotency_keys.h"
#include "control/idle_sessions.h"
#include "control/job_tally.h"
#include "control/launch_blame.h"
#include "control/ledgers.h"
#include "control/node_desk.h"
#include "control/pass_driver.h"
#include "control/read_outs.h"
#include "control/running_jobs.h"
#include "control/token_book.h"
#include "core/policy.h"
#include "sched/cluster_view.h"
#include "sched/fair_share.h"
#include "sched/feasibility.h"
#include "sched/job_queue.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace baton::control {

class Controller {
 public:
  explicit Controller(ControllerOptions options = {});
  // Its parts share its members by reference (NodeDesk): it stays where it was made.
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Rebuilds the state a store snapshot describes. REQUIRES: called once, before any Apply.
  void Restore(store::Snapshot snapshot, TimePoint now);

  Reply Apply(const Command& command, TimePoint now);
  Effects EndBatch(TimePoint now);

  // Replaces each job with the current record as GET shows it: the running attempt's cost
  // included. A job the controller does not know is left as it is.
  void ShowAsNow(std::vector<Job>& jobs, TimePoint now) const;
  void ShowAsNow(Job& job, TimePoint now) const;

  // Read-only views for tests and the simulator.
  // Task `array_index` of array `id`; with array_index < 0, job `id` itself.
  const Job* FindJob(JobId id, int array_index = -1) const {
    return control::FindJob(jobs_, id, array_index);
  }
  const std::map<JobId, Job>& jobs() const { return jobs_; }
  size_t queue_length() const { return queue_.size(); }
  const Autoscaler& autoscaler() const { return scaling_; }
  const sched::UsageLedger& usage() const { return ledgers_.usage(); }

 private:
  // The parts, lent read-only to answer a read command (read_outs.h).
  ReadOuts Read() const;
  Result<Submitted> Submit(const SubmitJobs& c, TimePoint now);
  Result<Resources> Admit(const JobSpec& spec, const std::string& user, TimePoint now);
  Result<JobShown> Act(const JobAction& c, TimePoint now);
  // `baton update` (controller_update.cc): the update of a job or an array's tasks, their
  // specs patched (job_update.h), put in place (the queue, the nodes of a running job).
  Result<JobShown> Update(const UpdateJob& c, TimePoint now);
  void ApplyPatch(Job& job, JobSpec spec, TimePoint now);
  Status ActOn(Job& job, JobAction::Kind kind, const Caller& caller, TimePoint now);
  // An interactive pool's idle sessions warned, then stopped (controller_sessions.cc).
  void ReclaimIdleSessions(TimePoint now);
  Result<CronShown> Crons(const DeleteCron& c, TimePoint now);
  // What an agent says of its jobs as it registers (reconciled with what the controller
  // expects of its node) or reports (controller_agents.cc; the node's part is the NodeDesk's).
  Result<RegisterReply> Register(const AgentRegister& c, TimePoint now);
  Result<ReportAnswer> Report(const AgentReport& c, TimePoint now);
  // How often an agent sends its GPUs' readings: the agent's own 2 s, or longer, so that all
  // the nodes together send at most options_.sample_reports_per_second reports a second.
  Duration SampleInterval() const;
  void OnTick(TimePoint now);
  // The jobs that wait for capacity, in queue order, as autoscaling plans for them
  // (controller_scaling.cc).
  std::vector<ScaleDemand> ScaleDemands() const;

  void Schedule(TimePoint now);
  // Takes in a pass's decisions: reasons, preemptions, starts; whether an arrival that waits
  // could preempt (the re-pass rule, sched/job_queue.h).
  bool ApplyPass(PassDriver::Ran& ran, TimePoint now);
  // Starts `j` on its allocation: the view, its state, the launch orders.
  void StartJob(Job& j, TimePoint now);
  // Sends the launch orders of the job's current attempt (only rank `only_rank`'s if given).
  void Launch(Job& job, std::optional<size_t> only_rank = std::nullopt);
  void HandleEvent(NodeRecord& node, const JobEvent& e, TimePoint now);
  void StopParts(Job& job, StopReason reason, Duration grace, TimePoint now);
  void Finish(Job& job, TimePoint now);
  void NoteOutputLimit(Job& job, const NodeRecord& node, const JobEvent& e, TimePoint now);
  // What the agent says of its GPUs' health (NodeDesk::Health), and the jobs on GPUs that
  // failed stopped, to be requeued.
  // Stops the jobs a failed GPU or a reclaimed node hit (NodeDesk::Hit): back to the queue
  // without a retry spent, when they end.
  void StopHits(const std::vector<NodeDesk::Hit>& hits, TimePoint now);

  void SetState(Job& job, JobState to, TimePoint now);
  void Enqueue(Job& job, TimePoint now);
  void Dequeue(Job& job);
  // Looks again at blocked jobs that may go now; those that can enter the queue
  // (controller_waiting.cc, with the DependencyGate gate_).
  void Recheck(const std::vector<JobId>& ids, TimePoint now);
  // A task of a throttled array gives up its place: the waiting tasks that may, take it.
  void LeaveGate(const Job& job, TimePoint now);
  // A new job (admission.h's DraftJob) given its id, kept.
  Job& Add(Job job, TimePoint now);
  // Recurring jobs (controller_crons.cc, with the CronBook crons_): when a run ends (unless its
  // series was deleted) the next is queued at the batch's end, waiting for the next time its
  // schedule names.
  void QueueNextRuns(TimePoint now);
  void MarkDirty(const Job& job) { changed_.jobs.insert(job.id); }

  ControllerOptions options_;
  std::map<JobId, Job> jobs_;
  mutable AccountNumbers numbers_;  // a pass's numbers for (project, user) and pools
  int64_t next_id_ = 1;
  IdempotencyKeys keys_;  // the submits' Idempotency-Keys

  sched::JobQueue queue_;  // pending jobs whose dependencies are met; pass planning
  DependencyGate gate_;    // pending jobs held back: dependencies, a time, an array's throttle
  FailureAlerts failure_alerts_;  // job_failed alerts: an array's counted, said at its end
  CronBook crons_;                // recurring jobs: their series and the next runs owed
  LaunchBlame blame_;             // running after launch failures elsewhere: to prove and blame
  RunningJobs running_;           // jobs_ never drops a job, and map nodes do not move

  sched::ClusterView view_;
  PassDriver passes_;  // runs a pass: its input, its buffers, the last full pass's claims

  // What this batch changed that its store batch must carry (EndBatch takes them): the jobs
  // changed (MarkDirty: every change to a job is saved), whether next_id_ moved, the drains
  // set or lifted.
  struct Changed {
    std::set<JobId> jobs;
    bool next_id = false;
    std::vector<store::Drain> drains;
  } changed_;
  EventRing events_;
  // After what it shares (view_, running_, events_, queue_, changed_.drains).
  NodeDesk nodes_;
  TokenBook tokens_;
  Counters counters_;           // for GET /metrics, since this controller started
  JobTally tally_;              // for GET /metrics: jobs by state, projects' ended attempts
  IdleSessions idle_sessions_;  // the clocks of idle sessions (controller_sessions.cc)
  NodeLedger node_costs_;       // what autoscaled nodes cost, in stretches of one use
  Ledgers ledgers_;             // after what it reads (options_, jobs_, running_, node_costs_)
  // After what it shares (options_, events_, nodes_, view_, jobs_, node_costs_).
  Autoscaler scaling_;
};

}  // namespace baton::control
