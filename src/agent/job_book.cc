#include "agent/job_book.h"

namespace baton::agent {

JobBook::Effects JobBook::Take(const Order& order, TimePoint now) {
  Effects fx;
  if (order.kind == Order::Kind::kLaunch) {
    auto it = jobs_.find(JobAttempt{order.launch.job, order.launch.attempt});
    if (it == jobs_.end()) {
      fx.launches.push_back(order.launch);
      return fx;
    }
    // The launch of what runs here, again: its time limit changed (`baton update --time`).
    RunningJob& job = it->second;
    if (job.exited || job.order.time_limit == order.launch.time_limit) return fx;
    job.order.time_limit = order.launch.time_limit;
    job.stop.LimitChanged(job.order, job.started_at, now);
    fx.relimited.push_back(it->first);
    return fx;
  }
  if (order.kind != Order::Kind::kStop) return fx;
  auto it = jobs_.find(JobAttempt{order.stop.job, order.stop.attempt});
  if (it == jobs_.end() || it->second.exited) return fx;
  RunningJob& job = it->second;
  for (int sig : job.stop.Stop(job.order, order.stop.grace_period, now))
    fx.signals.emplace_back(it->first, sig);
  if (job.stop.TakeKillMoved()) fx.deadlines.push_back(it->first);
  return fx;
}

JobBook::Effects JobBook::Tick(TimePoint now) {
  Effects fx;
  for (auto& [key, job] : jobs_) {
    if (job.exited) continue;
    for (int sig : job.stop.Tick(job.order, job.started_at, now)) fx.signals.emplace_back(key, sig);
  }
  return fx;
}

JobEvent JobBook::Exited(const JobAttempt& key, const EndFacts& facts, const std::string& node,
                         TimePoint now) {
  RunningJob& job = jobs_.at(key);
  job.exited = true;
  if (facts.status) job.status = *facts.status;
  JobEvent e = EndEvent(job.order, facts, node, now);
  job.launch_failed = e.launch_failed;
  job.lost = e.lost;
  return e;
}

std::vector<JobEvent> JobBook::LaunchFailed(RunningJob job, int code, const std::string& message) {
  job.exited = true;
  job.launch_failed = true;
  job.status.exit_code = code;
  JobEvent started{.job = job.order.job,
                   .attempt = job.order.attempt,
                   .kind = JobEvent::Kind::kStarted,
                   .at = job.started_at,
                   .launch_failed = true};
  JobEvent exited = started;
  exited.kind = JobEvent::Kind::kExited;
  exited.exit_code = code;
  exited.message = message;
  jobs_[JobAttempt{job.order.job, job.order.attempt}] = std::move(job);
  return {started, exited};
}

RunningJob& JobBook::Adopt(RunRecord record) {
  RunningJob& job = jobs_[JobAttempt{record.order.job, record.order.attempt}];
  job = RunningJob{};
  job.order = std::move(record.order);
  job.process = record.process;
  job.started_at = record.started_at;
  job.adopted = true;
  job.start_reported = true;
  return job;
}

void JobBook::Acknowledged(const std::map<JobAttempt, LogShipment>& logs,
                           const std::map<JobAttempt, int64_t>& metrics,
                           const std::set<JobAttempt>& ends) {
  for (const auto& [key, s] : logs) {
    auto it = jobs_.find(key);
    if (it == jobs_.end() || s.unreadable) continue;
    (s.head ? it->second.log_shipped : it->second.tail_sent) += s.bytes;
  }
  for (const auto& [key, n] : metrics) {
    if (auto it = jobs_.find(key); it != jobs_.end()) it->second.metrics_shipped += n;
  }
  for (const JobAttempt& key : ends) {
    if (auto it = jobs_.find(key); it != jobs_.end()) it->second.exit_acked = true;
  }
}

void JobBook::Registered(bool new_leader, const std::set<JobAttempt>& held) {
  for (auto& [key, job] : jobs_) {
    if (new_leader) job.log_shipped = job.metrics_shipped = 0;
    job.start_reported = true;
    job.exit_acked = job.exited && !held.count(key);
  }
}

std::vector<int> TakeDueSignals(RunningJob& job, bool pid_known, bool shim_alive) {
  std::vector<int> due;
  if (pid_known) due.swap(job.unsent);
  if (!pid_known && !shim_alive) job.unsent.clear();  // it never ran: nothing to signal
  return due;
}

std::vector<RunningJob> JobBook::TakeDone(
    const std::function<bool(const RunningJob&)>& all_shipped) {
  std::vector<RunningJob> done;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->second.exit_acked && it->second.unsent.empty() && all_shipped(it->second)) {
      done.push_back(std::move(it->second));
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  return done;
}

bool JobBook::Busy() const {
  for (const auto& [key, job] : jobs_) {
    if (!job.exited || !job.unsent.empty()) return true;  // a signal waits for a pid
  }
  return false;
}

std::vector<bool> JobBook::HeldGpus(size_t gpus) const {
  std::vector<bool> held(gpus, false);
  for (const auto& [key, job] : jobs_) {
    if (job.exited || job.order.interactive != Interactive::kNone) continue;
    for (int g : job.order.gpus) {
      if (g >= 0 && static_cast<size_t>(g) < held.size()) held[g] = true;
    }
  }
  return held;
}

}  // namespace baton::agent
