// Costs and a job's GPU readings: what a job's GPUs cost by the catalog, and the budgets
// (control/budget_book.h) fed from them.
#include <cmath>

#include "control/controller.h"

namespace baton::control {

int64_t Controller::PricePerHour(const Job& job) const {
  double per_hour = 0;
  for (const NodeAllocation& part : job.allocation) {
    const NodeRecord* node = nodes_.Find(part.node);
    if (node == nullptr) continue;
    for (int index : part.gpus) {
      for (const Gpu& g : node->info.gpus) {
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
  budgets_.AttemptClosed(job.spec.project, cost);
  utilization_.Close(job);
}

void Controller::ObserveUtilization(const NodeRecord& node, const std::vector<GpuSample>& samples) {
  if (samples.empty()) return;
  // The node's own jobs: every node reports every 2 s, so a walk of all running jobs here
  // would cost nodes x jobs per interval.
  for (JobId id : node.running) {
    const Job* job = running_.at(id);
    double sum = 0;
    int n = 0;
    for (const NodeAllocation& part : job->allocation) {
      if (part.node != node.info.name || !part.started || part.ended) continue;
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
    utilization_.Add(id, sum / n);
  }
}

BudgetBook::RunningCost Controller::RunningCostByProject(TimePoint now, bool all) const {
  BudgetBook::RunningCost cost;
  for (const auto& [id, job] : running_) {
    if (all || budgets_.Tracks(job->spec.project))
      cost[job->spec.project] += AttemptCost(*job, now);
  }
  return cost;
}

void Controller::RecountBudgets(TimePoint now, bool quiet) {
  // Every project's: the recount may give a budget to a project that had none.
  budgets_.Recount(options_.policy, jobs_, RunningCostByProject(now, true), now, quiet);
}

void Controller::CheckBudgets(TimePoint now) {
  // Every tick: most clusters have no budget, and then nothing walks the running jobs.
  if (budgets_.empty()) return;
  for (ClusterEvent& alert :
       budgets_.Check(options_.policy, jobs_, RunningCostByProject(now), now)) {
    Raise(std::move(alert), now);
  }
}

Result<JobMetrics> Controller::JobMetricsOf(const GetJobMetrics& c, TimePoint now) const {
  const Job* job = FindJob(c.id, c.array_index);
  if (job == nullptr) return Err(NotFound("job " + c.id.ToString() + " does not exist"));
  JobMetrics m{.job = job->id.value,
               .state = job->state,
               .gpu_seconds = AllService(*job, now),
               .cost = static_cast<double>(AllCost(*job, now)) / 1e6,
               .cost_per_hour = static_cast<double>(job->cost_per_hour_micros) / 1e6,
               .currency = options_.policy.currency,
               .utilization_sum = job->utilization_sum,
               .samples = job->utilization_samples};
  utilization_.AddTo(job->id, &m.utilization_sum, &m.samples);
  if (job->state == JobState::kRunning) {
    for (const NodeAllocation& part : job->allocation) {
      const NodeRecord* node = nodes_.Find(part.node);
      for (int index : part.gpus) {
        JobGpuReading g{.node = part.node, .index = index, .milli = part.milli_per_gpu};
        if (node != nullptr) {
          for (const Gpu& gpu : node->info.gpus) {
            if (gpu.index == index) {
              g.model = gpu.model;
              g.memory_total_bytes = gpu.memory_bytes;
            }
          }
          for (const GpuSample& s : node->samples) {
            if (s.index == index) g.sample = s;
          }
        }
        m.gpus.push_back(std::move(g));
      }
    }
  }
  return m;
}

}  // namespace baton::control
