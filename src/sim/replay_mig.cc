#include <algorithm>
#include <set>

#include "sched/mig_plan.h"
#include "sim/replay.h"

namespace baton::sim::replay {

double Replay::MigFragmentationNow() const {
  if (mig_gpus_ == 0) return 0;
  double sum = 0;
  for (const Agent& a : agents_) {
    for (const MigParent& p : a.info.mig_gpus) {
      std::vector<sched::MigInstance> layout;
      for (const Gpu& g : a.info.gpus) {
        if (!g.vacant && g.physical == p.physical)
          layout.push_back(sched::MigInstance{.profile = g.mig_profile, .start = g.mig_start});
      }
      sum += sched::MigFragmentation(layout, p.memory_bytes);
    }
  }
  return sum / static_cast<double>(mig_gpus_);
}

void Replay::MakeMigChanges() {
  std::vector<MigDue> due;
  std::erase_if(mig_due_, [&](const MigDue& d) {
    if (d.at > now_) return false;
    due.push_back(d);
    return true;
  });
  std::set<size_t> registering;
  for (const MigDue& d : due) {
    Agent& a = agents_[d.agent];
    const MigParent* parent = nullptr;
    for (const MigParent& p : a.info.mig_gpus) {
      if (p.physical == d.order.physical) parent = &p;
    }
    if (parent == nullptr) continue;
    // The GPU's instances after the change: those destroyed gone, those created made as an
    // agent's Discover would report them.
    std::vector<Gpu> instances;
    Gpu like;
    for (const Gpu& g : a.info.gpus) {
      if (g.physical == d.order.physical) like = g;
      const bool destroyed = !g.vacant && g.physical == d.order.physical &&
                             std::find(d.order.destroy.begin(), d.order.destroy.end(),
                                       MigSlice{.profile = g.mig_profile, .start = g.mig_start}) !=
                                 d.order.destroy.end();
      if (!g.vacant && !destroyed) instances.push_back(g);
    }
    std::vector<sched::MigInstance> layout;
    for (const Gpu& g : instances) {
      if (g.physical == d.order.physical)
        layout.push_back(sched::MigInstance{.profile = g.mig_profile, .start = g.mig_start});
    }
    for (const MigSlice& c : d.order.create) {
      layout.push_back(sched::MigInstance{.profile = c.profile, .start = c.start});
      Gpu m = like;
      m.vacant = false;
      m.uuid = "MIG-" + a.name + "-" + std::to_string(d.order.physical) + "-" +
               std::to_string(c.start) + "-" + c.profile;
      m.mig_profile = c.profile;
      m.mig_start = c.start;
      m.model = MigModel(parent->model, c.profile);
      auto name = ParseMigProfile(c.profile);
      m.memory_bytes = name ? int64_t{name->memory_gb} << 30 : 0;
      m.island = 1'000'000 - 1 - d.order.physical;  // as SimulatedGpus places instances
      instances.push_back(std::move(m));
    }
    // The hardware refuses what it cannot hold: the node registers as it was.
    if (sched::CheckMigLayout(layout, parent->memory_bytes).ok()) {
      const int64_t before = Devices(a.info);
      a.info.gpus = MigPlaces(instances, a.info.mig_gpus);
      total_milli_ += (Devices(a.info) - before) * 1000;
      ++mig_changes_;
      mig_fragmentation_ = MigFragmentationNow();
    }
    LogNode("mig", a.name);
    registering.insert(d.agent);
  }
  // One registration a node, however many of its GPUs changed: each would start a session
  // (and a poll) of its own.
  for (size_t agent : registering) {
    Agent& a = agents_[agent];
    RegisterRequest req{.node = a.info};
    for (const auto& [key, part] : parts_) {
      const auto& [job, attempt, index] = key;
      if (index != agent || !part.alive) continue;
      auto started = attempt_start_.find(std::make_pair(job, attempt));
      req.jobs.push_back(JobEvent{.job = JobId{job},
                                  .attempt = attempt,
                                  .kind = JobEvent::Kind::kStarted,
                                  .at = started != attempt_start_.end() ? started->second : now_});
    }
    // Ends not reported yet go with the registration, as an agent's would.
    for (JobEvent& e : a.outbox) req.jobs.push_back(std::move(e));
    a.outbox.clear();
    Queue(control::AgentRegister{std::move(req)}, Pending{.kind = Sent::kRegister, .index = agent});
  }
}

}  // namespace baton::sim::replay
