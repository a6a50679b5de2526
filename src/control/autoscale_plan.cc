#include "control/autoscale_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/node.h"
#include "sched/placement.h"

namespace baton::control {

namespace {

// What one node's part of a job asks.
struct Part {
  int64_t milli = 0;
  int cpus = 0;
  int64_t memory = 0;
};

// A share of a GPU counts as the whole GPU: shares are placed GPU by GPU, and a plan that
// packs them by their sum could promise a node more than its GPUs hold.
Part PartOf(const Resources& r) {
  const int nodes = std::max(r.nodes, 1);
  const int64_t milli = r.milli_gpus / nodes;
  return Part{
      .milli = milli > 0 && milli < 1000 ? 1000 : milli, .cpus = r.cpus, .memory = r.memory_bytes};
}

// A node that is coming (resuming, or resumed by this plan): what is left of it.
struct Bin {
  const NodeTemplate* t = nullptr;
  std::string name;  // "" for one this plan resumes (named when the resume is made)
  int64_t free_milli = 0;
  int free_cpus = 0;
  int64_t free_memory = 0;
  bool planned = false;  // resumed by this plan (its jobs are the resume's)
};

Bin Fresh(const NodeTemplate& t) {
  return Bin{.t = &t,
             .free_milli = int64_t{t.gpus} * 1000,
             .free_cpus = t.cpus,
             .free_memory = t.memory_bytes};
}

bool Fits(const Bin& b, const Part& p) {
  return b.free_milli >= p.milli && (p.cpus == 0 || b.free_cpus >= p.cpus) &&
         (p.memory == 0 || b.free_memory >= p.memory);
}

// `exclusive`: the job holds the node alone.
void Take(Bin& b, const Part& p, bool exclusive) {
  b.free_milli -= p.milli;
  b.free_cpus -= p.cpus;
  b.free_memory -= p.memory;
  if (exclusive) {
    b.free_milli = 0;
    b.free_cpus = 0;
    b.free_memory = 0;
  }
}

// A fresh node for an exclusive job; any node with room for another.
bool Room(const Bin& b, const Part& p, bool exclusive) {
  if (exclusive && b.free_milli != int64_t{b.t->gpus} * 1000) return false;
  return Fits(b, p);
}

std::string Nodes(int n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); }

std::string Listed(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool Excluded(const ScaleDemand& d, const std::string& name) {
  return !name.empty() && std::find(d.exclude.begin(), d.exclude.end(), name) != d.exclude.end();
}

// Whether `name` is one of the names autoscaling gives `t`'s nodes (TEMPLATE-1..MAX).
bool NameOf(const NodeTemplate& t, const std::string& name) {
  const std::string prefix = t.name + "-";
  if (name.size() <= prefix.size() || name.size() > prefix.size() + 6 ||
      name.compare(0, prefix.size(), prefix) != 0)
    return false;
  int k = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    k = k * 10 + (name[i] - '0');
  }
  return name[prefix.size()] != '0' && k >= 1 && k <= t.max;
}

// A resume of `t` that `d` is one of the jobs of names none of the nodes `d` must not be given.
void Avoid(ScalePlan::Resume& r, const NodeTemplate& t, const ScaleDemand& d) {
  for (const std::string& name : d.exclude) {
    if (NameOf(t, name) && std::find(r.avoid.begin(), r.avoid.end(), name) == r.avoid.end())
      r.avoid.push_back(name);
  }
}

// `t`'s names that `d` must not be given and that no live node holds: each is one node fewer
// of `t` that could be resumed for it.
std::vector<std::string> Barred(const NodeTemplate& t, const ScaleDemand& d,
                                const std::set<std::string>& live_names) {
  std::vector<std::string> barred;
  for (const std::string& name : d.exclude) {
    if (NameOf(t, name) && live_names.count(name) == 0) barred.push_back(name);
  }
  return barred;
}

}  // namespace

bool TemplateHolds(const NodeTemplate& t, const std::string& pool, const Resources& r,
                   bool preemptible) {
  if (t.pool != pool || (t.spot && !preemptible) || !r.nodelist.empty()) return false;
  const Part p = PartOf(r);
  if (p.milli > int64_t{t.gpus} * 1000) return false;
  if (p.milli > 0 && !GpuTypeMatches(t.gpu_model, "", r.gpu_type)) return false;
  if (r.gpu_memory_bytes > 0 && t.gpu_memory_bytes < r.gpu_memory_bytes) return false;
  return (p.cpus == 0 || t.cpus >= p.cpus) && (p.memory == 0 || t.memory_bytes >= p.memory);
}

const NodeTemplate* TemplateOfNode(const std::vector<NodeTemplate>& templates,
                                   const std::string& node) {
  for (const NodeTemplate& t : templates) {
    if (NameOf(t, node)) return &t;
  }
  return nullptr;
}

ScalePlan PlanScaling(const std::vector<NodeTemplate>& templates,
                      const std::vector<ScaledNode>& nodes, const std::vector<ScaleDemand>& waiting,
                      const ScaleRules& rules, TimePoint now) {
  ScalePlan plan;
  std::map<std::string, const NodeTemplate*> by_name;
  for (const NodeTemplate& t : templates) by_name[t.name] = &t;
  // Per template: nodes resuming, ready or suspending (what its maximum counts), and those
  // that stay (resuming or ready: what its minimum counts).
  std::map<std::string, int> live, staying;
  std::set<std::string> live_names;
  std::vector<Bin> bins;  // the coming nodes, then those this plan resumes
  for (const ScaledNode& n : nodes) {
    auto t = by_name.find(n.template_name);
    if (t == by_name.end()) continue;  // a template since removed: left as it is
    if (n.state == ScaledNode::State::kResuming && now - n.since >= rules.resume_timeout) {
      const std::string why = "it did not register within the resume timeout of " +
                              FormatDuration(rules.resume_timeout);
      plan.failed.push_back({n.name, why});
      plan.suspends.push_back({n.name, why});  // the provider stops what it started
      continue;
    }
    if (n.state == ScaledNode::State::kResuming || n.state == ScaledNode::State::kReady ||
        n.state == ScaledNode::State::kSuspending) {
      ++live[n.template_name];
      live_names.insert(n.name);
    }
    if (n.state == ScaledNode::State::kResuming || n.state == ScaledNode::State::kReady)
      ++staying[n.template_name];
    if (n.state == ScaledNode::State::kResuming) {
      bins.push_back(Fresh(*t->second));
      bins.back().name = n.name;
    }
    // A ready node's free room: a gang waiting for its other nodes counts on it.
    if (n.state == ScaledNode::State::kReady && n.free_milli >= 0) {
      bins.push_back(Bin{.t = t->second,
                         .name = n.name,
                         .free_milli = n.free_milli,
                         .free_cpus = n.free_cpus,
                         .free_memory = n.free_memory});
    }
  }

  // The waiting jobs, in queue order: onto capacity already coming, else onto new nodes of
  // the cheapest template that holds them.
  std::map<std::string, ScalePlan::Resume> resumes;
  std::vector<std::string> order;  // the templates in the order their first resume came
  int budget = rules.resume_budget;
  for (const ScaleDemand& d : waiting) {
    const Part p = PartOf(d.resources);
    const int parts = std::max(d.resources.nodes, 1);
    std::vector<size_t> chosen;
    const bool alone = d.resources.exclusive;
    for (size_t i = 0; i < bins.size() && static_cast<int>(chosen.size()) < parts; ++i) {
      if (Room(bins[i], p, alone) && !Excluded(d, bins[i].name) &&
          TemplateHolds(*bins[i].t, d.pool, d.resources, d.preemptible))
        chosen.push_back(i);
    }
    // On the coming nodes that have room (all of a gang's parts if they can), and what is
    // missing on new nodes.
    auto take_chosen = [&] {
      for (size_t i : chosen) {
        Take(bins[i], p, alone);
        if (!bins[i].planned) continue;
        // On nodes this plan resumes: one of the jobs they are for.
        ScalePlan::Resume& r = resumes[bins[i].t->name];
        if (std::find(r.jobs.begin(), r.jobs.end(), d.job) == r.jobs.end()) r.jobs.push_back(d.job);
        Avoid(r, *bins[i].t, d);
      }
    };
    const int missing = parts - static_cast<int>(chosen.size());
    if (missing == 0) {
      take_chosen();
      continue;
    }
    const NodeTemplate* best = nullptr;
    const NodeTemplate* full = nullptr;     // one that holds it, but is at its maximum
    const NodeTemplate* barring = nullptr;  // one below it, but for the names `d` must not use
    std::vector<std::string> barred_names;
    for (const NodeTemplate& t : templates) {
      if (!TemplateHolds(t, d.pool, d.resources, d.preemptible)) continue;
      if (live[t.name] + missing > t.max) {
        full = full != nullptr ? full : &t;
        continue;
      }
      if (std::vector<std::string> barred = Barred(t, d, live_names);
          live[t.name] + static_cast<int>(barred.size()) + missing > t.max) {
        if (barring == nullptr) {
          barring = &t;
          barred_names = std::move(barred);
        }
        continue;
      }
      if (best == nullptr || t.price_per_hour < best->price_per_hour) best = &t;
    }
    if (best == nullptr) {
      plan.unserved.emplace_back(
          d.job,
          !d.resources.nodelist.empty()
              ? "it names its nodes (--nodelist): autoscaling starts none for it"
          : full != nullptr ? "template " + full->name + " is at its max of " + Nodes(full->max)
          : barring != nullptr
              ? "template " + barring->name + " has no node left it may be given (not " +
                    Listed(barred_names) + ")"
              : "no template of pool " + d.pool + " holds " + sched::DescribeRequest(d.resources) +
                    (d.preemptible ? "" : " on a node that is not spot"));
      continue;
    }
    if (budget < missing) {
      plan.unserved.emplace_back(d.job, "the resume rate allows no more nodes now");
      continue;
    }
    take_chosen();
    budget -= missing;
    live[best->name] += missing;
    staying[best->name] += missing;
    for (int i = 0; i < missing; ++i) {
      bins.push_back(Fresh(*best));
      bins.back().planned = true;
      Take(bins.back(), p, alone);
    }
    ScalePlan::Resume& r = resumes[best->name];
    if (r.count == 0) order.push_back(best->name);
    r.template_name = best->name;
    r.count += missing;
    if (std::find(r.jobs.begin(), r.jobs.end(), d.job) == r.jobs.end()) r.jobs.push_back(d.job);
    Avoid(r, *best, d);
  }
  for (const std::string& name : order) {
    ScalePlan::Resume r = std::move(resumes[name]);
    r.reason = "for " + std::to_string(r.jobs.size()) +
               (r.jobs.size() == 1 ? " waiting job" : " waiting jobs");
    plan.resumes.push_back(std::move(r));
  }
  // Each template's minimum.
  for (const NodeTemplate& t : templates) {
    const int missing = std::min({t.min - staying[t.name], t.max - live[t.name], budget});
    if (missing <= 0) continue;
    budget -= missing;
    live[t.name] += missing;
    staying[t.name] += missing;
    plan.resumes.push_back(
        {.template_name = t.name, .count = missing, .reason = "its minimum of " + Nodes(t.min)});
  }

  // Idle ready nodes, the longest idle first, while their template keeps its minimum.
  std::vector<const ScaledNode*> idle;
  for (const ScaledNode& n : nodes) {
    if (n.state == ScaledNode::State::kReady && !n.busy && n.idle_since &&
        now - *n.idle_since >= rules.idle_time && by_name.count(n.template_name) != 0)
      idle.push_back(&n);
  }
  std::stable_sort(idle.begin(), idle.end(), [](const ScaledNode* a, const ScaledNode* b) {
    return *a->idle_since < *b->idle_since;
  });
  int suspend_budget = rules.suspend_budget;
  for (const ScaledNode* n : idle) {
    if (suspend_budget == 0) break;
    const NodeTemplate& t = *by_name.at(n->template_name);
    if (staying[t.name] <= t.min) continue;
    --staying[t.name];
    --suspend_budget;
    plan.suspends.push_back({n->name, "idle for " + FormatDuration(now - *n->idle_since)});
  }
  return plan;
}

}  // namespace baton::control
