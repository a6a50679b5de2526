// Costs, budgets and a job's GPU readings: what a job's GPUs cost by the catalog, what each
// budgeted project has spent in its period, and the alerts and hard stop that follow.
#include <cmath>

#include "control/controller.h"

namespace baton::control {

namespace {

std::string Money(int64_t micros, const std::string& currency) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(micros) / 1e6, currency.c_str());
  return buf;
}

int64_t BudgetMicros(const Budget& b) { return static_cast<int64_t>(std::llround(b.amount * 1e6)); }

}  // namespace

int64_t Controller::PricePerHour(const Job& job) const {
  double per_hour = 0;
  for (const NodeAllocation& part : job.allocation) {
    auto node = nodes_.find(part.node);
    if (node == nodes_.end()) continue;
    for (int index : part.gpus) {
      for (const Gpu& g : node->second.info.gpus) {
        if (g.index != index) continue;
        std::optional<double> price = options_.policy.HourlyPrice(g.model, job.spec.preemptible);
        if (price) per_hour += *price * static_cast<double>(part.milli_per_gpu) / 1000.0;
      }
    }
  }
  return static_cast<int64_t>(std::llround(per_hour * 1e6));
}

int64_t Controller::AttemptCost(const Job& job, TimePoint now) {
  if (!job.started_at || now <= *job.started_at || job.cost_per_hour_micros == 0) return 0;
  double hours = static_cast<double>((now - *job.started_at).count()) / 3'600'000.0;
  return static_cast<int64_t>(std::llround(static_cast<double>(job.cost_per_hour_micros) * hours));
}

void Controller::CloseAttempt(Job& job, TimePoint now) {
  int64_t cost = AttemptCost(job, now);
  job.cost_micros += cost;
  open_cost_[job.spec.project] += cost;
  if (auto it = utilization_.find(job.id.value); it != utilization_.end()) {
    job.utilization_sum += it->second.sum;
    job.utilization_samples += it->second.samples;
    utilization_.erase(it);
  }
}

void Controller::ObserveUtilization(const std::string& node,
                                    const std::vector<GpuSample>& samples) {
  if (samples.empty()) return;
  for (const auto& [id, job] : running_) {
    double sum = 0;
    int n = 0;
    for (const NodeAllocation& part : job->allocation) {
      if (part.node != node || !part.started || part.ended) continue;
      for (int g : part.gpus) {
        for (const GpuSample& s : samples) {
          if (s.index == g) {
            sum += s.utilization_pct;
            ++n;
          }
        }
      }
    }
    if (n == 0) continue;
    Utilization& u = utilization_[id.value];
    u.sum += sum / n;
    u.samples += 1;
  }
}

void Controller::RecountBudgets(TimePoint now, bool quiet) {
  std::map<std::string, BudgetState> next;
  // The alerts already raised for the same budget in the same period stay raised.
  auto keep_alerted = [&](const std::string& name, BudgetState& b) {
    auto old = budgets_.find(name);
    if (old != budgets_.end() && old->second.period_start == b.period_start &&
        old->second.amount == b.amount) {
      b.alerted = old->second.alerted;
    }
  };
  for (const auto& [name, project] : options_.policy.projects) {
    if (project.budget.amount < 0) continue;
    BudgetState& b = next[name];
    b.period_start = PeriodStart(project.budget.period, now);
    b.next_period = NextPeriodStart(project.budget.period, now);
    b.amount = project.budget.amount;
    keep_alerted(name, b);
  }
  if (options_.policy.default_project.budget.amount >= 0) {
    // Every project without its own entry has the default budget: count those that have jobs.
    for (const auto& [id, job] : jobs_) {
      const std::string& name = job.spec.project;
      if (next.count(name) != 0 || options_.policy.projects.count(name) != 0) continue;
      BudgetState& b = next[name];
      b.period_start = PeriodStart(options_.policy.default_project.budget.period, now);
      b.next_period = NextPeriodStart(options_.policy.default_project.budget.period, now);
      b.amount = options_.policy.default_project.budget.amount;
      keep_alerted(name, b);
    }
  }
  for (const auto& [id, job] : jobs_) {
    if (!IsTerminal(job.state) || !job.finished_at) continue;
    auto b = next.find(job.spec.project);
    if (b != next.end() && *job.finished_at >= b->second.period_start)
      b->second.ended_cost += job.cost_micros;
  }
  for (const auto& [id, job] : running_) {
    auto b = next.find(job->spec.project);
    if (b != next.end()) b->second.running_cost += AttemptCost(*job, now);
  }
  budgets_ = std::move(next);
  if (!quiet) return;
  for (auto& [name, b] : budgets_) {
    int64_t limit = BudgetMicros(options_.policy.Project(name).budget);
    int64_t spent = BudgetSpent(name, now);
    b.alerted = std::max(b.alerted, spent >= limit ? 2 : spent * 10 >= limit * 8 ? 1 : 0);
  }
}

int64_t Controller::BudgetSpent(const std::string& project, TimePoint now) const {
  auto b = budgets_.find(project);
  if (b == budgets_.end()) return 0;
  int64_t spent = b->second.ended_cost;
  if (auto open = open_cost_.find(project); open != open_cost_.end()) spent += open->second;
  for (const auto& [id, job] : running_) {
    if (job->spec.project == project) spent += AttemptCost(*job, now);
  }
  return spent;
}

void Controller::CheckBudgets(TimePoint now) {
  bool new_period = false;
  for (const auto& [name, b] : budgets_) new_period |= now >= b.next_period;
  if (new_period) RecountBudgets(now, false);
  if (budgets_.empty()) return;
  std::map<std::string, int64_t> running_cost;
  for (const auto& [id, job] : running_) {
    if (budgets_.count(job->spec.project) != 0)
      running_cost[job->spec.project] += AttemptCost(*job, now);
  }
  for (auto& [name, b] : budgets_) {
    const Budget& budget = options_.policy.Project(name).budget;
    int64_t limit = BudgetMicros(budget);
    b.running_cost = running_cost[name];
    int64_t spent = b.ended_cost + open_cost_[name] + b.running_cost;
    int level = spent >= limit ? 2 : spent * 10 >= limit * 8 ? 1 : 0;
    if (level <= b.alerted) continue;
    b.alerted = level;
    const std::string& cur = options_.policy.currency;
    std::string period = budget.period == BudgetPeriod::kTotal
                             ? ""
                             : " this " + std::string(BudgetPeriodName(budget.period));
    std::string msg = "project " + name + " has spent " + Money(spent, cur) + " of its budget of " +
                      Money(limit, cur) + period + " (" + (level == 2 ? "100" : "80") + " %)";
    if (level == 2 && budget.hard_stop) msg += "; new jobs are refused";
    Raise(ClusterEvent{.kind = "budget", .severity = "alert", .project = name, .message = msg},
          now);
  }
}

Status Controller::BudgetAllows(const std::string& project, TimePoint now) const {
  const Budget& budget = options_.policy.Project(project).budget;
  if (budget.amount < 0 || !budget.hard_stop) return Status::Ok();
  auto b = budgets_.find(project);
  if (b == budgets_.end()) return Status::Ok();
  int64_t limit = BudgetMicros(budget);
  auto open = open_cost_.find(project);
  int64_t spent =
      b->second.ended_cost + (open == open_cost_.end() ? 0 : open->second) + b->second.running_cost;
  if (spent < limit) return Status::Ok();
  const std::string& cur = options_.policy.currency;
  std::string until = budget.period == BudgetPeriod::kTotal
                          ? "until an admin raises it"
                          : "until " + FormatRfc3339(NextPeriodStart(budget.period, now)) +
                                " or an admin raises it";
  return PermissionDenied("project " + project + " has spent its budget (" + Money(spent, cur) +
                          " of " + Money(limit, cur) + "); new jobs are refused " + until);
}

Reply Controller::JobMetricsOf(const GetJobMetrics& c, TimePoint now) const {
  const Job* job = FindJob(c.id);
  if (job == nullptr) return ErrorReply(NotFound("job " + c.id.ToString() + " does not exist"));
  JobMetrics m{.job = job->id.value,
               .state = std::string(JobStateName(job->state)),
               .gpu_seconds = AllService(*job, now),
               .cost = static_cast<double>(AllCost(*job, now)) / 1e6,
               .cost_per_hour = static_cast<double>(job->cost_per_hour_micros) / 1e6,
               .currency = options_.policy.currency,
               .utilization_sum = job->utilization_sum,
               .samples = job->utilization_samples};
  if (auto it = utilization_.find(job->id.value); it != utilization_.end()) {
    m.utilization_sum += it->second.sum;
    m.samples += it->second.samples;
  }
  if (job->state == JobState::kRunning) {
    for (const NodeAllocation& part : job->allocation) {
      auto node = nodes_.find(part.node);
      for (int index : part.gpus) {
        JobGpuReading g{.node = part.node, .index = index, .milli = part.milli_per_gpu};
        if (node != nodes_.end()) {
          for (const Gpu& gpu : node->second.info.gpus) {
            if (gpu.index == index) {
              g.model = gpu.model;
              g.memory_total_bytes = gpu.memory_bytes;
            }
          }
          for (const GpuSample& s : node->second.samples) {
            if (s.index == index) g.sample = s;
          }
        }
        m.gpus.push_back(std::move(g));
      }
    }
  }
  Reply r;
  r.jobs.push_back(*job);
  r.jobs.back().cost_micros = AllCost(*job, now);
  r.job_metrics = std::move(m);
  return r;
}

}  // namespace baton::control
