#include "control/controller.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>

#include "control/admission.h"
#include "control/job_checks.h"
#include "control/job_cost.h"
#include "control/model_sizing.h"
#include "control/pass_records.h"
#include "control/session_orders.h"
#include "core/overloaded.h"

namespace baton::control {

Controller::Controller(ControllerOptions options)
    : options_(std::move(options)),
      nodes_(NodeDesk::Shared{.options = options_,
                              .jobs = jobs_,
                              .running = running_,
                              .view = view_,
                              .events = events_,
                              .queue = queue_,
                              .drains = changed_.drains}),
      ledgers_(Ledgers::Shared{.policy = options_.policy,
                               .jobs = jobs_,
                               .running = running_,
                               .node_costs = node_costs_}),
      scaling_(Autoscaler::Shared{.options = options_,
                                  .events = events_,
                                  .nodes = nodes_,
                                  .view = view_,
                                  .jobs = jobs_,
                                  .ledger = node_costs_}) {
  queue_.SetLevels(options_.policy.las_thresholds);
}

void Controller::Restore(store::Snapshot snapshot, TimePoint now) {
  next_id_ = snapshot.next_job_id;
  keys_.Restore(snapshot.idempotency);
  for (Job& job : snapshot.jobs) {
    JobId id = job.id;
    next_id_ = std::max(next_id_, id.value + 1);
    Job& j = jobs_[id] = std::move(job);
    j.account = {};  // another controller's number, if any: this one numbers its own
    tally_.Add(j);
    if (j.state == JobState::kRunning) {
      for (const auto& part : j.allocation) nodes_.Ensure(part.node).running.insert(id);
      running_.emplace(id, &j,
                       KeptOf(j, numbers_, view_));  // after its nodes are in the view (first_node)
      if (DependencyGate::ArrayGate* gate = gate_.GateOf(j)) gate->active += 1;
      blame_.Watch(j);
      // Its nodes must come back and say what became of it; until then they are awaited.
      for (const auto& part : j.allocation) {
        NodeRecord& n = nodes_.Ensure(part.node);
        n.last_seen = now;
      }
    }
  }
  // Pending jobs once every job is known: the running tasks of an array hold their places
  // first, and a singleton sees every earlier job of its name.
  for (auto& [id, j] : jobs_) {
    if (j.state == JobState::kPending) Enqueue(j, now);
  }
  // Recurring jobs: each series' latest run, and whether a next one is owed (a run that ended
  // in the batch before a crash, its next not yet queued).
  crons_.Restore(jobs_);
  tokens_.Restore(std::move(snapshot.tokens));
  events_.Restore(std::move(snapshot.events));
  nodes_.RestoreDrains(snapshot.drains);
  node_costs_.Restore(std::move(snapshot.node_charges));  // before the budgets count them
  // Fair-share usage from the jobs' own history, the budgets' spending.
  ledgers_.Restore(now);
  // Reasons of restored jobs are recomputed by the first pass.
  queue_.RequestFull();
}

namespace {

// The reply to command `c`: its status, and its answer when done. The handler's result must be
// C's own answer (AnswerOf<C>), so a command cannot be answered with another's.
template <typename C>
Reply ReplyTo(const C& c, Result<AnswerOf<C>> result) {
  (void)c;
  if (!result) return ErrorReply(std::move(result.error()));
  return Reply{Status::Ok(), std::move(*result)};
}

// A token command's answer: the token it made or changed, or those it revoked.
Result<TokenShown> Shown(Result<store::Token> token) {
  return token.map([](store::Token t) { return TokenShown{std::move(t)}; });
}
Result<TokenList> Shown(Result<std::vector<store::Token>> tokens) {
  return tokens.map([](std::vector<store::Token> t) { return TokenList{std::move(t)}; });
}

// A submit with an Idempotency-Key seen before: the jobs it made then.
std::optional<Submitted> Repeated(const SubmitJobs& c, const IdempotencyKeys& keys,
                                  const std::map<JobId, Job>& jobs) {
  if (c.idempotency_key.empty()) return std::nullopt;
  const store::IdempotencyEntry* e = keys.Find(c.caller.user, c.idempotency_key);
  if (e == nullptr) return std::nullopt;
  Submitted r;
  for (int i = 0; i < e->count; ++i) {
    if (const Job* j = FindJob(jobs, JobId{e->first.value + i})) r.jobs.push_back(*j);
  }
  return r;
}

}  // namespace

Reply Controller::Apply(const Command& command, TimePoint now) {
  // A node command's answer: the nodes as they are after it.
  auto nodes_after = [&](Status done) -> Result<NodeList> {
    if (!done.ok()) return Err(std::move(done));
    return Read().Nodes();
  };
  return std::visit(
      Overloaded{
          [&](const SubmitJobs& c) { return ReplyTo(c, Submit(c, now)); },
          [&](const JobAction& c) { return ReplyTo(c, Act(c, now)); },
          [&](const UpdateJob& c) { return ReplyTo(c, Update(c, now)); },
          [&](const GetJob& c) { return ReplyTo(c, Read().Get(c, now)); },
          [&](const ListJobs& c) { return ReplyTo(c, Read().List(c, now)); },
          [&](const GetJobMetrics& c) { return ReplyTo(c, Read().Metrics(c, now)); },
          [&](const OpenTunnel& c) {
            // Sent to the agent of the job's first node; the bytes never pass through here.
            return ReplyTo(c, TunnelFor(c, jobs_, nodes_.table()).map([&](TunnelTo to) {
              nodes_.Send(to.node, std::move(to.order));
              return JobShown{JobAsShown(*to.job, now)};
            }));
          },
          [&](const ListNodes& c) { return ReplyTo(c, Read().Nodes()); },
          [&](const GetQueue& c) { return ReplyTo(c, Read().Queue(c)); },
          [&](const DrainNode& c) { return ReplyTo(c, nodes_after(nodes_.Drain(c))); },
          [&](const InjectFault& c) { return ReplyTo(c, nodes_after(nodes_.Inject(c))); },
          [&](const GetEvents& c) { return ReplyTo(c, Read().Events(c)); },
          [&](const CreateToken& c) { return ReplyTo(c, Shown(tokens_.Create(c, now))); },
          [&](const RevokeToken& c) { return ReplyTo(c, Shown(tokens_.Revoke(c))); },
          [&](const JoinNode& c) { return ReplyTo(c, Shown(tokens_.Join(c, now))); },
          [&](const RevokeNode& c) { return ReplyTo(c, Shown(tokens_.RevokeNodeCredentials(c))); },
          [&](const ListTokens& c) { return ReplyTo(c, Read().Tokens(c)); },
          [&](const GetMetrics& c) { return ReplyTo(c, Read().Metrics(now)); },
          [&](const GetUsage& c) { return ReplyTo(c, Read().Usage(c, now)); },
          [&](const ListCrons& c) { return ReplyTo(c, Read().Crons(c, now)); },
          [&](const DeleteCron& c) { return ReplyTo(c, Crons(c, now)); },
          [&](const ListModels& c) { return ReplyTo(c, Read().Models()); },
          [&](const SetPolicy& c) {
            options_.policy = c.policy;
            ledgers_.PolicyChanged(now);
            queue_.SetLevels(c.policy.las_thresholds);
            nodes_.PoolsChanged();
            scaling_.PolicyChanged(now);
            queue_.RequestFull();  // order, reserve and preempt by the new policy
            return ReplyTo(c, Acknowledged{});
          },
          [&](const AgentRegister& c) { return ReplyTo(c, Register(c, now)); },
          [&](const AgentPoll& c) { return ReplyTo(c, nodes_.Poll(c, now)); },
          [&](const AgentReport& c) { return ReplyTo(c, Report(c, now)); },
          [&](const ProviderAnswer& c) {
            Status done = scaling_.Answered(c, now);
            if (!done.ok()) return ErrorReply(std::move(done));
            return ReplyTo(c, Acknowledged{});
          },
          [&](const Tick& c) {
            OnTick(now);
            return ReplyTo(c, Acknowledged{});
          },
      },
      command);
}

Effects Controller::EndBatch(TimePoint now) {
  if (crons_.Owed()) QueueNextRuns(now);
  // Autoscaling looks at the submitted jobs once a full pass has said why they wait.
  if (scaling_.WantsFullPass(now)) queue_.RequestFull();
  Schedule(now);
  // After the pass, so that the jobs it left waiting for capacity are known.
  if (scaling_.Due(now)) scaling_.Scan(ScaleDemands(), now);
  Effects fx;
  nodes_.ExpirePolls(now);  // at every batch's end: a few at a time in a large cluster
  fx.deliveries = nodes_.TakeDeliveries();
  if (options_.store_jobs) {
    fx.store.jobs.reserve(changed_.jobs.size());
    for (JobId id : changed_.jobs) fx.store.jobs.push_back(jobs_.at(id));
  }
  KeepRunning(changed_.jobs, jobs_, numbers_, view_, running_);
  changed_.jobs.clear();
  if (changed_.next_id) fx.store.next_job_id = next_id_;
  changed_.next_id = false;
  fx.store.idempotency = keys_.TakeNew();
  fx.store.drains = std::move(changed_.drains);
  changed_.drains.clear();
  fx.events = events_.TakeNew();
  fx.store.events = fx.events;  // kept, the newest store::kKeptEvents (GET /v1/events)
  fx.store.tokens = tokens_.TakeChanged();
  fx.provider_calls = scaling_.TakeCalls();
  fx.store.node_charges = node_costs_.TakeChanged();
  fx.store.node_charges_removed = node_costs_.TakeRemoved();
  return fx;
}

ReadOuts Controller::Read() const {
  return ReadOuts{.policy = options_.policy,
                  .jobs = jobs_,
                  .queue = queue_,
                  .gate = gate_,
                  .running = running_,
                  .nodes = nodes_.table(),
                  .view = view_,
                  .usage = ledgers_.usage(),
                  .events = events_,
                  .tokens = tokens_,
                  .counters = counters_,
                  .tally = tally_,
                  .crons = crons_,
                  .budgets = ledgers_.budgets(),
                  .utilization = ledgers_.utilization(),
                  .numbers = numbers_,
                  .scaling = &scaling_,
                  .node_costs = &node_costs_};
}

// ---- users' commands ----

Result<Submitted> Controller::Submit(const SubmitJobs& c, TimePoint now) {
  if (c.specs.empty()) return Err(InvalidArgument("jobs: must hold at least one job"));
  if (std::optional<Submitted> repeat = Repeated(c, keys_, jobs_)) {
    repeat->dry_run = c.dry_run;  // the jobs the key made: what the submit would answer
    return std::move(*repeat);
  }
  std::vector<Resources> resolved;  // each spec's request as it will run
  resolved.reserve(c.specs.size());
  std::vector<std::vector<int>> tasks(c.specs.size());  // an array's indices; {-1}: one job
  // Specs that name a model are sized first, on copies (the others are read in place).
  std::vector<std::string> sized;  // how each was (empty when none names a model)
  std::vector<JobSpec> own;
  if (std::any_of(c.specs.begin(), c.specs.end(), [](const JobSpec& s) { return s.model; })) {
    RETURN_IF_ERROR(SizeModels(c.specs, options_.policy, nodes_.Known(), &own, &sized));
  }
  const std::vector<JobSpec>& specs = own.empty() ? c.specs : own;
  size_t total = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string where = specs.size() > 1 ? "jobs[" + std::to_string(i) + "]." : "";
    const JobSpec& spec = specs[i];
    Result<Resources> fits = Admit(spec, c.caller.user, now);
    if (!fits) {
      Status st = fits.error();
      return Err(st.code() == Code::kInvalidArgument ? InvalidArgument(where + st.message()) : st);
    }
    if (!spec.schedule.empty() && !CronBook::NextRunTime(spec, now)) {
      return Err(InvalidArgument(where + "schedule: \"" + spec.schedule +
                                 "\" does not come within five years"));
    }
    resolved.push_back(std::move(*fits));
    tasks[i] = {-1};
    if (auto array = *TasksOf(spec)) tasks[i] = std::move(array->indices);  // validated above
    total += tasks[i].size();
    if (total > SpecLimits::kMaxArrayTasks) {
      return Err(TooLarge(where + "array: more than " + std::to_string(SpecLimits::kMaxArrayTasks) +
                          " jobs in one submit"));
    }
  }
  Submitted r{.created = !c.dry_run, .dry_run = c.dry_run};
  if (!c.dry_run) counters_.jobs_submitted += total;
  JobId first{next_id_};
  for (size_t i = 0; i < specs.size(); ++i) {
    const JobId array{tasks[i].front() >= 0 ? next_id_ : 0};
    const JobSpec& spec = specs[i];
    for (int index : tasks[i]) {
      Job job = DraftJob(spec.sweep.empty() ? spec : SweepTask(spec, static_cast<size_t>(index)),
                         resolved[i], c.caller.user, options_.policy, now);
      job.array_index = index;
      if (!sized.empty()) job.sized = sized[i];
      if (job.spec.hold) {
        job.state = JobState::kHeld;
        job.reason = WaitReason::kHeld;
        job.reason_detail = "held at submit";
      }
      if (c.dry_run) {
        r.jobs.push_back(std::move(job));
        continue;
      }
      Job& added = Add(std::move(job), now);
      added.array_id = array;
      if (i < c.step_keys.size()) added.step_key = c.step_keys[i];
      if (!added.spec.schedule.empty()) crons_.Start(added, now);
      if (added.spec.hold) {
        added.reason_detail += "; `baton release " + added.id.ToString() + "` lets it run";
      } else {
        Enqueue(added, now);
      }
      MarkDirty(added);
      r.jobs.push_back(added);
    }
  }
  if (c.dry_run) return r;
  changed_.next_id = true;
  if (!c.idempotency_key.empty()) {
    keys_.Record(store::IdempotencyEntry{.user = c.caller.user,
                                         .key = c.idempotency_key,
                                         .first = first,
                                         .count = static_cast<int>(total)});
  }
  scaling_.Nudge(now);  // a node may be wanted for them
  return r;
}

// Whether a spec may be submitted: valid, within its pool's limits and its project's budget,
// its dependencies existing, and some set of nodes able to hold it; its request as it will run.
Result<Resources> Controller::Admit(const JobSpec& spec, const std::string& user, TimePoint now) {
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  RETURN_IF_ERROR(AdmitToPool(spec, options_.policy));
  RETURN_IF_ERROR(AdmitNotPreemptible(spec, options_.policy));
  if (const PoolPolicy* pool = options_.policy.Pool(spec.pool))
    RETURN_IF_ERROR(AdmitSession(jobs_, spec, *pool, user));
  RETURN_IF_ERROR(CheckDependencies(jobs_, spec));
  // Running attempts count as of the last tick: a submit does not walk the running jobs.
  RETURN_IF_ERROR(ledgers_.Allows(spec.project, now));
  return nodes_.Feasible(spec, user);
}

Job& Controller::Add(Job job, TimePoint now) {
  job.id = JobId{next_id_++};
  Job& added = jobs_[job.id] = std::move(job);
  tally_.Add(added);
  ledgers_.Track(added.spec.project, now);
  return added;
}

Result<JobShown> Controller::Act(const JobAction& c, TimePoint now) {
  ASSIGN_OR_RETURN(const Job* found, FindOwned(jobs_, c.id, c.array_index, c.caller));
  Job& job = jobs_.at(found->id);
  if (c.array_index < 0 && job.array_id == job.id) {
    // The array's id: every task it can apply to (the others are left as they are).
    for (auto it = jobs_.find(job.id); it != jobs_.end() && it->second.array_id == job.id; ++it) {
      Job& task = it->second;
      bool applies = c.kind == JobAction::Kind::kCancel ? !IsTerminal(task.state)
                     : c.kind == JobAction::Kind::kHold ? task.state == JobState::kPending
                                                        : task.state == JobState::kHeld;
      if (applies) (void)ActOn(task, c.kind, c.caller, now);
    }
  } else {
    RETURN_IF_ERROR(ActOn(job, c.kind, c.caller, now));
  }
  return JobShown{job};
}

Status Controller::ActOn(Job& job, JobAction::Kind kind, const Caller& caller, TimePoint now) {
  const std::string name = TaskName(job.array_id.value != 0 ? job.array_id : job.id,
                                    job.array_id.value != 0 ? job.array_index : -1);
  using K = JobAction::Kind;
  switch (kind) {
    case K::kCancel:
      if (IsTerminal(job.state)) break;  // cancelling an ended job changes nothing
      if (job.state == JobState::kRunning) {
        if (!job.stop_requested) {
          job.stop_requested = true;
          MarkDirty(job);
          StopParts(job, StopReason::kCancel, job.spec.grace_period, now);
        }
      } else {
        if (job.cron_id.value != 0) {
          // Cancelling the run that waits for its time ends the series (a running one ends
          // only that run).
          job.cron_stopped = true;
          crons_.Erase(job.cron_id);
        }
        job.reason = WaitReason::kNone;
        job.reason_detail = "cancelled before it ran";
        SetState(job, JobState::kCancelled, now);
      }
      break;
    case K::kHold:
      if (job.state == JobState::kHeld) break;
      if (job.state != JobState::kPending) {
        return Conflict("job " + name + " is " + std::string(JobStateName(job.state)) +
                        "; only pending jobs can be held");
      }
      job.reason = WaitReason::kHeld;
      job.reason_detail = "held by " + caller.user + "; `baton release " + name + "` lets it run";
      SetState(job, JobState::kHeld, now);
      break;
    case K::kRelease:
      if (job.state == JobState::kPending) break;
      if (job.state != JobState::kHeld) {
        return Conflict("job " + name + " is " + std::string(JobStateName(job.state)) +
                        "; only held jobs can be released");
      }
      SetState(job, JobState::kPending, now);
      break;
  }
  return Status::Ok();
}

void Controller::ShowAsNow(std::vector<Job>& jobs, TimePoint now) const {
  for (Job& j : jobs) ShowAsNow(j, now);
}

void Controller::ShowAsNow(Job& job, TimePoint now) const {
  const Job* current = FindJob(job.id);
  if (current == nullptr) return;
  job = JobAsShown(*current, now);
  // A waiting job: what autoscaling does for it, in its reason's words.
  if (job.state != JobState::kPending) return;
  if (std::string note = scaling_.NoteFor(job.id); !note.empty())
    job.reason_detail += (job.reason_detail.empty() ? "" : "; ") + note;
}

// ---- job state bookkeeping ----

void Controller::SetState(Job& job, JobState to, TimePoint now) {
  if (!CanTransition(job.state, to)) std::abort();  // an illegal transition is a bug here
  JobState from = job.state;
  // A task of a throttled array holds a place while queued or running (a pending job that is
  // neither queued nor blocked is one Enqueue found can never run: it took none).
  const bool held_place =
      job.array_id.value != 0 &&
      ((from == JobState::kPending && queue_.Find(job.id) != nullptr && to != JobState::kRunning) ||
       from == JobState::kRunning);
  if (from == JobState::kPending) Dequeue(job);
  if (from == JobState::kRunning) {
    running_.erase(job.id);
    // From its allocation, which is cleared only after this (Finish's requeue).
    for (const auto& part : job.allocation) {
      if (NodeRecord* node = nodes_.Find(part.node)) node->running.erase(job.id);
    }
    const double gpu_seconds = job.gpu_seconds;
    const int64_t cost_micros = job.cost_micros;
    ledgers_.Stopped(job, now);  // what the attempt used and cost, added to the job's
    tally_.Charged(job.spec.project, job.gpu_seconds - gpu_seconds, job.cost_micros - cost_micros);
  }
  tally_.Moved(from, to);
  job.state = to;
  MarkDirty(job);
  if (held_place) LeaveGate(job, now);
  if (to == JobState::kPending) Enqueue(job, now);
  if (to == JobState::kRunning) {
    for (const auto& part : job.allocation) nodes_.Ensure(part.node).running.insert(job.id);
    running_.emplace(job.id, &job,
                     KeptOf(job, numbers_, view_));  // after its nodes are in the view (first_node)
    ledgers_.Started(job, now);
    job.cost_per_hour_micros = PricePerHour(job, nodes_.table(), options_.policy);
  }
  if (IsTerminal(to)) {
    job.finished_at = now;
    ledgers_.Ended(job);
    counters_.jobs_finished[std::string(JobStateName(to))] += 1;
    auto tasks = [&] { return FailureAlerts::ArrayTasks(job, jobs_); };
    if (std::optional<ClusterEvent> e = failure_alerts_.Ended(job, to, tasks))
      events_.Raise(std::move(*e), now);
    if (job.cron_id.value != 0 && !job.cron_stopped) crons_.Ended(job.id);
    Recheck(gate_.AfterEnd(job, jobs_), now);  // the jobs that waited for its end
  }
}

}  // namespace baton::control
