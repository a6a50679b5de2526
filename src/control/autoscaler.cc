#include "control/autoscaler.h"

#include <algorithm>
#include <set>

namespace baton::control {

namespace {

constexpr size_t kJobsNamed = 100;  // jobs a resume call names at most

// "h100-1, h100-2" (the first few, and how many more).
std::string Names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i == 8) return out + " and " + std::to_string(names.size() - i) + " more";
    out += (i == 0 ? "" : ", ") + names[i];
  }
  return out;
}

std::string JobsListed(const std::vector<JobId>& jobs) {
  std::vector<std::string> ids;
  for (JobId id : jobs) ids.push_back(id.ToString());
  return Names(ids);
}

std::string Nodes(size_t n) { return std::to_string(n) + (n == 1 ? " node" : " nodes"); }

const Job* JobOf(const std::map<JobId, Job>& jobs, JobId id) {
  auto it = jobs.find(id);
  return it == jobs.end() ? nullptr : &it->second;
}

}  // namespace

const NodeTemplate* Autoscaler::Template(const std::string& name) const {
  for (const NodeTemplate& t : policy().templates) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

ProviderRequest& Autoscaler::NewCall(uint64_t* id_out, ProviderVerb verb,
                                     const std::string& reason) {
  const uint64_t id = next_call_++;
  *id_out = id;
  in_flight_[id] = Call{.verb = verb};
  // Filled in field by field: GCC 12 at -O3 takes a designated ProviderCall with a default
  // NodeTemplate inside for one read uninitialized (-Wmaybe-uninitialized).
  ProviderCall& call = calls_.emplace_back();
  call.id = id;
  call.argv = policy().provider;
  call.timeout = policy().provider_timeout;
  call.request.verb = verb;
  call.request.reason = reason;
  return calls_.back().request;
}

int Autoscaler::Budget(std::deque<TimePoint>& times, int rate, TimePoint now) const {
  while (!times.empty() && now - times.front() >= std::chrono::minutes(1)) times.pop_front();
  return std::max(0, rate - static_cast<int>(times.size()));
}

void Autoscaler::Alert(EventKind kind, const std::string& node, const std::string& message,
                       TimePoint now) {
  const bool alert = kind == EventKind::kNodeResumeFailed || kind == EventKind::kProviderFailed;
  shared_.events.Raise(ClusterEvent{.kind = kind,
                                    .severity = alert ? Severity::kAlert : Severity::kInfo,
                                    .node = node,
                                    .message = message},
                       now);
}

void Autoscaler::ProviderFailed(ProviderVerb verb, const std::string& node,
                                const std::string& message, TimePoint now) {
  // Said once while it fails alike (a provider that cannot list fails at every scan), again
  // after a while.
  auto [it, first] = failing_.try_emplace(verb, message, now);
  if (!first && it->second.first == message && now - it->second.second < kSaidAgain) return;
  it->second = {message, now};
  Alert(EventKind::kProviderFailed, node, message, now);
}

void Autoscaler::Charge(const std::string& name, NodeUse use, const Job* job, TimePoint now) {
  auto n = nodes_.find(name);
  const NodeTemplate* t = n == nodes_.end() ? nullptr : Template(n->second.template_name);
  if (t == nullptr) return;  // a template since removed: its stretch goes on at its price
  shared_.ledger.Use(name, *t, policy().templates, use, job ? job->spec.project : "",
                     job ? job->user : "", now);
}

void Autoscaler::ChargeAsBefore(const std::string& name, NodeUse use, TimePoint now) {
  auto n = nodes_.find(name);
  const NodeTemplate* t = n == nodes_.end() ? nullptr : Template(n->second.template_name);
  if (t == nullptr) return;
  const store::NodeCharge* open = shared_.ledger.Open(name);
  const Node& node = n->second;
  const bool seen = !node.last_project.empty();
  shared_.ledger.Use(name, *t, policy().templates, use,
                     seen   ? node.last_project
                     : open ? open->project
                            : "",
                     seen   ? node.last_user
                     : open ? open->user
                            : "",
                     now);
}

void Autoscaler::Scan(const std::vector<ScaleDemand>& waiting, TimePoint now) {
  next_scan_ = now + policy().scan_interval;
  last_scan_ = now;
  nudged_ = false;
  if (!listed_) {
    // What the provider has first: a new controller must not start twice what its
    // predecessor started.
    const bool asked = std::any_of(in_flight_.begin(), in_flight_.end(), [](const auto& c) {
      return c.second.verb == ProviderVerb::kList;
    });
    uint64_t id = 0;
    if (!asked) NewCall(&id, ProviderVerb::kList, "what the provider has, before any resume");
    return;
  }
  std::vector<ScaledNode> view;
  view.reserve(nodes_.size());
  for (auto& [name, n] : nodes_) {
    n.free_milli = -1;
    if (n.state == ScaledNode::State::kReady) {
      const NodeRecord* r = shared_.nodes.Find(name);
      n.busy = r != nullptr && !r->running.empty();
      if (const sched::NodeSlots* slots = shared_.view.FindNode(name);
          slots != nullptr && slots->schedulable) {
        n.free_milli = 0;
        for (const sched::GpuSlot& g : slots->gpus) {
          if (g.usable && g.free_milli == 1000) n.free_milli += 1000;  // whole GPUs only
        }
        n.free_cpus = slots->free_cpus;
        n.free_memory = slots->free_memory_bytes;
      }
      if (n.busy) {
        n.idle_since.reset();
        // Busy: its jobs pay their GPUs. One stretch while it stays busy; the latest job's
        // project and user are those its idle time is charged to after.
        const Job* latest = JobOf(shared_.jobs, *r->running.rbegin());
        if (latest != nullptr) {
          n.last_project = latest->spec.project;
          n.last_user = latest->user;
        }
        if (const store::NodeCharge* open = shared_.ledger.Open(name);
            open == nullptr || open->use != NodeLedger::UseName(NodeUse::kBusy))
          Charge(name, NodeUse::kBusy, latest, now);
      } else {
        if (!n.idle_since) n.idle_since = now;
        ChargeAsBefore(name, NodeUse::kIdle, now);
      }
    }
    // A resume still under way is not timed out: the provider's own timeout ends it first.
    if (n.state == ScaledNode::State::kResuming && n.call != 0 && in_flight_.count(n.call) != 0 &&
        in_flight_.at(n.call).verb == ProviderVerb::kResume) {
      ScaledNode waiting_for_answer = n;
      waiting_for_answer.since = now;
      view.push_back(waiting_for_answer);
      continue;
    }
    view.push_back(n);
  }
  const AutoscalingPolicy& p = policy();
  const ScaleRules rules{.idle_time = p.idle_time,
                         .resume_timeout = p.resume_timeout,
                         .resume_budget = Budget(resumed_, p.resume_rate, now),
                         .suspend_budget = Budget(suspended_, p.suspend_rate, now)};
  ScalePlan plan = PlanScaling(p.templates, view, waiting, rules, now);
  // What the jobs still waiting are told: what was resumed for them stands until they run;
  // why none serves them is this scan's.
  std::map<JobId, std::string> notes;
  for (const ScaleDemand& d : waiting) {
    if (auto it = notes_.find(d.job); it != notes_.end() && it->second.starts_with("autoscaling r"))
      notes.insert(*it);
  }
  for (const auto& [job, why] : plan.unserved)
    notes[job] = "autoscaling starts no node for it now: " + why;
  notes_ = std::move(notes);

  std::set<std::string> failed;
  for (const ScalePlan::NodeReason& f : plan.failed) {
    failed.insert(f.node);
    Fail({f.node}, f.reason, now);
  }
  std::vector<std::string> idle;
  std::string why;
  for (const ScalePlan::NodeReason& s : plan.suspends) {
    if (failed.count(s.node) != 0) continue;
    if (!why.empty() && why != s.reason) {
      Suspend(idle, ScaledNode::State::kSuspending, why, now);
      idle.clear();
    }
    idle.push_back(s.node);
    why = s.reason;
  }
  if (!idle.empty()) Suspend(idle, ScaledNode::State::kSuspending, why, now);
  // Suspends that failed before: asked again.
  std::vector<std::string> again, again_failed;
  for (const auto& [name, n] : nodes_) {
    if (n.call != 0) continue;
    if (n.state == ScaledNode::State::kSuspending) again.push_back(name);
    if (n.state == ScaledNode::State::kFailed) again_failed.push_back(name);
  }
  if (!again.empty()) Suspend(again, ScaledNode::State::kSuspending, "asked again", now);
  if (!again_failed.empty()) Suspend(again_failed, ScaledNode::State::kFailed, "asked again", now);
  for (const ScalePlan::Resume& r : plan.resumes) Resume(r, now);
}

std::optional<TimePoint> Autoscaler::NextDecision() const {
  if (!on()) return std::nullopt;
  if (!listed_) return next_scan_;  // the list to ask for (again)
  std::optional<TimePoint> at;
  auto consider = [&at](TimePoint t) {
    if (!at || t < *at) at = t;
  };
  const AutoscalingPolicy& p = policy();
  for (const auto& [name, n] : nodes_) {
    switch (n.state) {
      case ScaledNode::State::kResuming:
        consider(n.since + p.resume_timeout);
        break;
      case ScaledNode::State::kReady:
        if (n.idle_since) consider(*n.idle_since + p.idle_time);
        break;
      case ScaledNode::State::kSuspending:
      case ScaledNode::State::kFailed:
        if (n.call == 0) consider(next_scan_);  // a suspend that failed: asked again
        break;
      case ScaledNode::State::kSuspended:
        break;
    }
  }
  // The rates' windows: a resume or suspend the rate held back may be made then.
  if (!resumed_.empty()) consider(resumed_.front() + std::chrono::minutes(1));
  if (!suspended_.empty()) consider(suspended_.front() + std::chrono::minutes(1));
  return at;
}

std::vector<std::string> Autoscaler::FreeNames(const NodeTemplate& t, int count,
                                               const std::vector<std::string>& avoid) const {
  std::vector<std::string> names;
  for (int i = 1; i <= t.max && static_cast<int>(names.size()) < count; ++i) {
    std::string name = t.name + "-" + std::to_string(i);
    if (std::find(avoid.begin(), avoid.end(), name) != avoid.end()) continue;  // a job's no
    if (auto it = nodes_.find(name); it != nodes_.end()) {
      if (it->second.state != ScaledNode::State::kSuspended || it->second.call != 0) continue;
    } else if (const NodeRecord* r = shared_.nodes.Find(name);
               r != nullptr && r->state != NodeRecord::State::kSuspended) {
      continue;  // a node of the name that is not ours
    }
    names.push_back(std::move(name));
  }
  return names;
}

void Autoscaler::Resume(const ScalePlan::Resume& r, TimePoint now) {
  const NodeTemplate* t = Template(r.template_name);
  if (t == nullptr) return;
  std::vector<std::string> names = FreeNames(*t, r.count, r.avoid);
  if (names.empty()) return;
  std::string reason = r.reason;
  if (!r.jobs.empty()) reason += " (" + JobsListed(r.jobs) + ")";
  uint64_t id = 0;
  ProviderRequest& c = NewCall(&id, ProviderVerb::kResume, reason);
  c.node_template = *t;
  c.jobs.assign(r.jobs.begin(), r.jobs.begin() + std::min(r.jobs.size(), kJobsNamed));
  Call& call = in_flight_.at(id);
  call.template_name = t->name;
  for (const std::string& name : names) {
    c.nodes.push_back(ProvidedNode{.name = name, .template_name = t->name});
    call.nodes.push_back(name);
    Node& n = nodes_[name];
    n = Node{};
    n.name = name;
    n.template_name = t->name;
    n.state = ScaledNode::State::kResuming;
    n.since = now;
    n.call = id;
    n.reason = reason;
    resumed_.push_back(now);
    // Its boot is charged to the job it is resumed for (none: the template's minimum).
    Charge(name, NodeUse::kBoot, r.jobs.empty() ? nullptr : JobOf(shared_.jobs, r.jobs.front()),
           now);
  }
  Alert(EventKind::kNodeResuming, names.size() == 1 ? names[0] : "",
        "autoscaling resumes " + Nodes(names.size()) + " of template " + t->name + " (" +
            Names(names) + ") " + reason,
        now);
  for (JobId job : r.jobs) {
    notes_[job] = "autoscaling resumed " + Names(names) + " for it at " +
                  FormatRfc3339(now).substr(0, 19) + "Z (nodes take a while to boot)";
  }
}

void Autoscaler::Suspend(const std::vector<std::string>& names, ScaledNode::State state,
                         const std::string& reason, TimePoint now) {
  uint64_t id = 0;
  ProviderRequest& c = NewCall(&id, ProviderVerb::kSuspend, reason);
  Call& call = in_flight_.at(id);
  for (const std::string& name : names) {
    Node& n = nodes_.at(name);
    c.nodes.push_back(
        ProvidedNode{.name = name, .id = n.provider_id, .template_name = n.template_name});
    call.nodes.push_back(name);
    if (n.state != state) {
      n.state = state;
      n.since = now;
    }
    if (state == ScaledNode::State::kSuspending) n.reason = reason;
    n.call = id;
    n.idle_since.reset();
    if (NodeRecord* r = shared_.nodes.Find(name)) shared_.nodes.Leave(*r, true);
    suspended_.push_back(now);
  }
  if (state == ScaledNode::State::kSuspending && reason != "asked again") {
    Alert(EventKind::kNodeSuspending, names.size() == 1 ? names[0] : "",
          "autoscaling suspends " + Names(names) + ": " + reason, now);
  }
}

void Autoscaler::Fail(const std::vector<std::string>& names, const std::string& why,
                      TimePoint now) {
  for (const std::string& name : names) {
    Node& n = nodes_.at(name);
    n.state = ScaledNode::State::kFailed;
    n.since = now;
    n.reason = why;
    Charge(name, NodeUse::kFailed, nullptr, now);  // the cluster's, not the job's
  }
  Alert(EventKind::kNodeResumeFailed, names.size() == 1 ? names[0] : "",
        "the resume of " + Names(names) + " failed: " + why +
            "; suspended through the provider, and the jobs it was for wait for the next scan",
        now);
  Suspend(names, ScaledNode::State::kFailed, why, now);
}

void Autoscaler::Listed(const ProviderAnswer& answer, TimePoint now) {
  listed_ = true;
  for (const ProvidedNode& p : answer.nodes) {
    if (!IsValidNodeName(p.name) || Template(p.template_name) == nullptr) continue;
    if (auto it = nodes_.find(p.name); it != nodes_.end() && it->second.call != 0) continue;
    Node& n = nodes_[p.name];
    n = Node{};
    n.name = p.name;
    n.template_name = p.template_name;
    n.provider_id = p.id;
    n.since = now;
    const NodeRecord* r = shared_.nodes.Find(p.name);
    if (r != nullptr && r->state == NodeRecord::State::kReady) {
      n.state = ScaledNode::State::kReady;
      n.reason = "listed by the provider, registered";
    } else {
      n.state = ScaledNode::State::kResuming;
      n.reason = "listed by the provider, not registered yet";
    }
    // A stretch its predecessor left open goes on; a node it never charged starts now.
    if (shared_.ledger.Open(p.name) == nullptr) {
      Charge(p.name, n.state == ScaledNode::State::kReady ? NodeUse::kIdle : NodeUse::kBoot,
             nullptr, now);
    }
  }
  // A node charged before and not listed is gone: it cost until now, as far as is known.
  for (const std::string& name : shared_.ledger.OpenNodes()) {
    if (nodes_.count(name) == 0) shared_.ledger.End(name, now);
  }
}

Status Autoscaler::Answered(const ProviderAnswer& answer, TimePoint now) {
  auto it = in_flight_.find(answer.call);
  if (it == in_flight_.end())
    return NotFound("provider call " + std::to_string(answer.call) + ": not under way");
  const Call call = std::move(it->second);
  in_flight_.erase(it);
  if (answer.status.ok()) failing_.erase(call.verb);
  // This call's nodes still waiting for it.
  std::vector<std::string> mine;
  for (const std::string& name : call.nodes) {
    if (auto n = nodes_.find(name); n != nodes_.end() && n->second.call == answer.call) {
      n->second.call = 0;
      mine.push_back(name);
    }
  }
  switch (call.verb) {
    case ProviderVerb::kList:
      if (!answer.status.ok()) {
        ProviderFailed(
            call.verb, "",
            "provider list: " + answer.status.message() +
                "; autoscaling resumes and suspends nothing until it answers (asked again at "
                "the next scan)",
            now);
        return Status::Ok();
      }
      Listed(answer, now);
      return Status::Ok();
    case ProviderVerb::kResume: {
      std::vector<std::string> left_out;
      if (!answer.status.ok()) {
        for (const std::string& name : mine) {
          if (nodes_.at(name).state == ScaledNode::State::kResuming) left_out.push_back(name);
        }
        ProviderFailed(call.verb, "", "provider resume: " + answer.status.message(), now);
        if (!left_out.empty()) Fail(left_out, "the provider's resume failed", now);
        return Status::Ok();
      }
      std::set<std::string> started;
      for (const ProvidedNode& p : answer.nodes) {
        started.insert(p.name);
        auto n = nodes_.find(p.name);
        if (n != nodes_.end()) {
          n->second.provider_id = p.id;
          continue;
        }
        // A node the provider named itself: ours, resuming, if its template is known.
        const std::string t = p.template_name.empty() ? call.template_name : p.template_name;
        if (!IsValidNodeName(p.name) || Template(t) == nullptr) continue;
        Node& added = nodes_[p.name];
        added.name = p.name;
        added.template_name = t;
        added.provider_id = p.id;
        added.state = ScaledNode::State::kResuming;
        added.since = now;
        added.reason = "started by the provider under its own name";
        Charge(p.name, NodeUse::kBoot, nullptr, now);
      }
      for (const std::string& name : mine) {
        if (started.count(name) == 0 && nodes_.at(name).state == ScaledNode::State::kResuming)
          left_out.push_back(name);
      }
      if (!left_out.empty()) {
        Fail(left_out,
             "the provider started " + std::to_string(call.nodes.size() - left_out.size()) +
                 " of the " + Nodes(call.nodes.size()) + " asked, not these",
             now);
      }
      return Status::Ok();
    }
    case ProviderVerb::kSuspend:
      break;
  }
  if (!answer.status.ok()) {
    ProviderFailed(call.verb, mine.size() == 1 ? mine[0] : "",
                   "provider suspend of " + Names(mine) + ": " + answer.status.message() +
                       "; asked again at the next scan",
                   now);
    return Status::Ok();
  }
  for (const std::string& name : mine) {
    Node& n = nodes_.at(name);
    n.state = ScaledNode::State::kSuspended;
    n.since = now;
    n.busy = false;
    n.idle_since.reset();
    shared_.ledger.End(name, now);
    if (NodeRecord* r = shared_.nodes.Find(name)) shared_.nodes.Suspend(*r, now);
  }
  return Status::Ok();
}

void Autoscaler::Registered(const std::string& node, TimePoint now) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  Node& n = it->second;
  // Being returned to the provider (an idle node's suspend, a failed resume's): it goes, and
  // takes no job meanwhile (a late agent of a failed resume had no record to mark before).
  if (n.call != 0 && n.state != ScaledNode::State::kResuming) {
    if (NodeRecord* r = shared_.nodes.Find(node)) shared_.nodes.Leave(*r, true);
    return;
  }
  if (n.state != ScaledNode::State::kReady) {
    n.state = ScaledNode::State::kReady;
    n.since = now;
    n.reason = "";
  }
  n.idle_since = now;
  ChargeAsBefore(node, NodeUse::kIdle, now);  // booted for them: idle for them
  if (NodeRecord* r = shared_.nodes.Find(node)) shared_.nodes.Leave(*r, false);
}

void Autoscaler::PolicyChanged(TimePoint now) { next_scan_ = std::min(next_scan_, now); }

void Autoscaler::Show(NodeList& list) const {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < list.nodes.size(); ++i) at[list.nodes[i].info.name] = i;
  for (const auto& [name, n] : nodes_) {
    size_t i;
    if (auto found = at.find(name); found != at.end()) {
      i = found->second;
    } else {
      NodeStatus s;
      s.info.name = name;
      if (const NodeTemplate* t = Template(n.template_name)) {
        s.info.pool = t->pool;
        s.info.spot = t->spot;
        s.info.cpus = t->cpus;
        s.info.memory_bytes = t->memory_bytes;
        if (auto spec = ParseGpuSpec(t->gpu_spec); spec && spec->count > 0)
          s.info.gpus = SimulatedGpus(*spec, name);
      }
      s.gpu_jobs.resize(s.info.gpus.size());
      s.gpu_drain_reasons.resize(s.info.gpus.size());
      i = list.nodes.size();
      list.nodes.push_back(std::move(s));
    }
    NodeStatus& s = list.nodes[i];
    s.template_name = n.template_name;
    s.state_since = n.since;
    s.scaling_reason = n.reason;
    switch (n.state) {
      case ScaledNode::State::kResuming:
        s.state = NodeState::kResuming;
        break;
      case ScaledNode::State::kSuspending:
        s.state = NodeState::kSuspending;
        break;
      case ScaledNode::State::kSuspended:
        s.state = NodeState::kSuspended;
        break;
      case ScaledNode::State::kFailed:
        s.state = NodeState::kFailed;
        break;
      case ScaledNode::State::kReady:
        if (!n.busy) s.idle_since = n.idle_since;
        break;
    }
  }
  std::sort(list.nodes.begin(), list.nodes.end(),
            [](const NodeStatus& a, const NodeStatus& b) { return a.info.name < b.info.name; });
}

}  // namespace baton::control
