#include "control/budget_book.h"

#include <cmath>
#include <cstdio>

namespace baton::control {
namespace {

std::string Money(int64_t micros, const std::string& currency) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s", static_cast<double>(micros) / 1e6, currency.c_str());
  return buf;
}

int64_t BudgetMicros(const Budget& b) { return static_cast<int64_t>(std::llround(b.amount * 1e6)); }

int64_t Find(const std::map<std::string, int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

// 2 at or over the budget, 1 at or over 80 % of it, else 0.
int Level(int64_t spent, int64_t limit) {
  return spent >= limit ? 2 : spent * 10 >= limit * 8 ? 1 : 0;
}

}  // namespace

BudgetBook::State BudgetBook::Start(const Budget& budget, TimePoint now) {
  return State{.period_start = PeriodStart(budget.period, now),
               .next_period = NextPeriodStart(budget.period, now),
               .amount = budget.amount};
}

int64_t BudgetBook::Open(const std::string& project) const { return Find(open_cost_, project); }

void BudgetBook::Recount(const Policy& policy, const std::map<JobId, Job>& jobs,
                         const RunningCost& running, TimePoint now, bool quiet) {
  std::map<std::string, State> next;
  auto add = [&](const std::string& name, const Budget& budget) {
    State b = Start(budget, now);
    // The alerts already raised for the same budget in the same period stay raised.
    auto old = budgets_.find(name);
    if (old != budgets_.end() && old->second.period_start == b.period_start &&
        old->second.amount == b.amount) {
      b.alerted = old->second.alerted;
    }
    next[name] = b;
  };
  for (const auto& [name, project] : policy.projects) {
    if (project.budget.amount >= 0) add(name, project.budget);
  }
  if (policy.default_project.budget.amount >= 0) {
    // Every project without its own entry has the default budget: count those that have jobs.
    for (const auto& [id, job] : jobs) {
      const std::string& name = job.spec.project;
      if (next.count(name) == 0 && policy.projects.count(name) == 0)
        add(name, policy.default_project.budget);
    }
  }
  for (const auto& [id, job] : jobs) {
    if (!IsTerminal(job.state) || !job.finished_at) continue;
    auto b = next.find(job.spec.project);
    if (b != next.end() && *job.finished_at >= b->second.period_start)
      b->second.ended_cost += job.cost_micros;
  }
  for (auto& [name, b] : next) b.running_cost = Find(running, name);
  budgets_ = std::move(next);
  if (!quiet) return;
  for (auto& [name, b] : budgets_) {
    int64_t spent = Spent(name, running);
    b.alerted = std::max(b.alerted, Level(spent, BudgetMicros(policy.Project(name).budget)));
  }
}

void BudgetBook::Track(const Policy& policy, const std::string& project, TimePoint now) {
  const Budget& budget = policy.Project(project).budget;
  if (budget.amount >= 0 && budgets_.count(project) == 0) budgets_[project] = Start(budget, now);
}

void BudgetBook::AttemptClosed(const std::string& project, int64_t micros) {
  open_cost_[project] += micros;
}

void BudgetBook::JobEnded(const std::string& project, int64_t micros) {
  open_cost_[project] -= micros;
  if (auto b = budgets_.find(project); b != budgets_.end()) b->second.ended_cost += micros;
}

std::vector<ClusterEvent> BudgetBook::Check(const Policy& policy, const std::map<JobId, Job>& jobs,
                                            const RunningCost& running, TimePoint now) {
  bool new_period = false;
  for (const auto& [name, b] : budgets_) new_period |= now >= b.next_period;
  if (new_period) Recount(policy, jobs, running, now, false);
  std::vector<ClusterEvent> alerts;
  for (auto& [name, b] : budgets_) {
    const Budget& budget = policy.Project(name).budget;
    int64_t limit = BudgetMicros(budget);
    b.running_cost = Find(running, name);
    int64_t spent = b.ended_cost + Open(name) + b.running_cost;
    int level = Level(spent, limit);
    if (level <= b.alerted) continue;
    b.alerted = level;
    const std::string& cur = policy.currency;
    std::string period = budget.period == BudgetPeriod::kTotal
                             ? ""
                             : " this " + std::string(BudgetPeriodName(budget.period));
    std::string msg = "project " + name + " has spent " + Money(spent, cur) + " of its budget of " +
                      Money(limit, cur) + period + " (" + (level == 2 ? "100" : "80") + " %)";
    if (level == 2 && budget.hard_stop) msg += "; new jobs are refused";
    alerts.push_back(ClusterEvent{
        .kind = EventKind::kBudget, .severity = Severity::kAlert, .project = name, .message = msg});
  }
  return alerts;
}

Status BudgetBook::Allows(const Policy& policy, const std::string& project, TimePoint now) const {
  const Budget& budget = policy.Project(project).budget;
  if (budget.amount < 0 || !budget.hard_stop) return Status::Ok();
  auto b = budgets_.find(project);
  if (b == budgets_.end()) return Status::Ok();
  int64_t limit = BudgetMicros(budget);
  int64_t spent = b->second.ended_cost + Open(project) + b->second.running_cost;
  if (spent < limit) return Status::Ok();
  const std::string& cur = policy.currency;
  std::string until = budget.period == BudgetPeriod::kTotal
                          ? "until an admin raises it"
                          : "until " + FormatRfc3339(NextPeriodStart(budget.period, now)) +
                                " or an admin raises it";
  return PermissionDenied("project " + project + " has spent its budget (" + Money(spent, cur) +
                          " of " + Money(limit, cur) + "); new jobs are refused " + until);
}

int64_t BudgetBook::Spent(const std::string& project, const RunningCost& running) const {
  auto b = budgets_.find(project);
  if (b == budgets_.end()) return 0;
  return b->second.ended_cost + Open(project) + Find(running, project);
}

}  // namespace baton::control
