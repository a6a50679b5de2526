// Autoscaling, carried out (issue 40; docs/operations.md "Elastic capacity"): the nodes
// autoscaling has made and their states (resuming, ready, suspending, suspended, failed), the
// scan that plans from the waiting jobs (autoscale_plan.h) every scan interval, and the calls
// to the provider that carry the plan out, made as effects (ProviderCall) and answered by
// commands (ProviderAnswer). Every decision is said as an event with its reason.
//
// Names: a template's nodes are TEMPLATE-1 .. TEMPLATE-MAX, chosen by the controller before the
// provider is called (as Slurm's ResumeProgram is given its nodes), so that nodes asked for
// count as coming capacity from the moment they are asked, and a failover finds them by name.
// The state is not stored: a new controller asks the provider to `list` before it resumes
// anything, and takes what it says (a node listed and registered is ready; listed only,
// resuming from then).
//
// A resume that fails (the provider exited non-zero, hung, or left some nodes out) and a node
// that did not register within the resume timeout are failed and suspended through the
// provider, so that nothing it half started is left running; the jobs they were for are still
// waiting (none of their retries is spent) and the next scan asks again. Owned by the
// Controller; not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "control/autoscale_plan.h"
#include "control/commands.h"
#include "control/controller_options.h"
#include "control/event_ring.h"
#include "control/node_desk.h"
#include "control/node_ledger.h"

namespace baton::control {

class Autoscaler {
 public:
  // A node of ours as it stands, with the call under way for it and why it is where it is.
  struct Node : ScaledNode {
    uint64_t call = 0;   // the provider call under way for it (0: none)
    std::string reason;  // why it is in its state
    // The latest job seen on it: whose its idle time is once it runs nothing.
    std::string last_project, last_user;
  };
  struct Shared {
    const ControllerOptions& options;
    EventRing& events;
    NodeDesk& nodes;  // a leaving node takes no new jobs; a suspended one is forgotten
    const sched::ClusterView& view;    // what a ready node has free
    const std::map<JobId, Job>& jobs;  // whose a node's time is
    NodeLedger& ledger;                // what each node costs, in stretches of one use
  };
  explicit Autoscaler(Shared shared) : shared_(shared) {}

  bool on() const { return shared_.options.policy.autoscaling.on(); }
  // Whether a scan is due at `now` (every scan interval while autoscaling is on, and at the
  // end of a batch that submitted jobs). The Controller asks at the end of every batch.
  bool Due(TimePoint now) const { return on() && now >= next_scan_; }
  // Jobs were submitted: the next scan is at this batch's end, after its pass, so that a job
  // that needs a node does not wait a scan interval for it (at most one such scan a second).
  void Nudge(TimePoint now) {
    if (!on()) return;
    next_scan_ = std::min(next_scan_, std::max(now, last_scan_ + kNudgeGap));
    nudged_ = true;
  }
  // Whether the pass before the scan due now must be a full one: jobs submitted since the last
  // scan get their reasons (what the scan reads) only from a full pass.
  bool WantsFullPass(TimePoint now) const { return nudged_ && Due(now); }
  static constexpr Duration kNudgeGap = std::chrono::seconds(1);
  // Plans from the jobs waiting for resources (in queue order) and begins the plan: resumes,
  // suspends and failures, each said as an event, the calls queued (TakeCalls). Before the
  // provider has once answered `list`, asks it and does nothing else.
  void Scan(const std::vector<ScaleDemand>& waiting, TimePoint now);
  // The provider's answer to one of its calls.
  Status Answered(const ProviderAnswer& answer, TimePoint now);
  // An agent registered: a node of ours is ready (a suspended or failed one too: its machine
  // is there after all).
  void Registered(const std::string& node, TimePoint now);
  // A new policy: a provider or a template removed leaves its nodes as they are.
  void PolicyChanged(TimePoint now);

  std::vector<ProviderCall> TakeCalls() { return std::exchange(calls_, {}); }

  // When a scan could next decide something if nothing else happens meanwhile (no submit, no
  // job starting or ending, no node registering, no provider answering): an idle node's idle
  // time running out, a resume's timeout, a rate limit's minute passing, a call to make again;
  // none when only such a change could. A scan at any other time plans what the last one did.
  // `baton sim` scans then and after each change instead of every scan interval.
  std::optional<TimePoint> NextDecision() const;
  TimePoint last_scan() const { return last_scan_; }
  TimePoint next_scan() const { return next_scan_; }

  // The nodes as users see them: each of ours given its template, state, since when, idle
  // since when and why, and those that have no record of the desk's (resuming, suspended)
  // added.
  void Show(NodeList& list) const;
  const std::map<std::string, Node>& nodes() const { return nodes_; }
  // What autoscaling does for a job waiting for capacity, in the words its reason adds ("" for
  // nothing): the nodes resumed for it, or why no template serves it now. As of the last scan.
  std::string NoteFor(JobId job) const {
    auto it = notes_.find(job);
    return it == notes_.end() ? "" : it->second;
  }

 private:
  struct Call {
    ProviderVerb verb = ProviderVerb::kList;
    std::vector<std::string> nodes;
    std::string template_name;
  };

  const AutoscalingPolicy& policy() const { return shared_.options.policy.autoscaling; }
  const NodeTemplate* Template(const std::string& name) const;
  // A new call of `verb` queued (its id in `id`), for the caller to fill in.
  ProviderRequest& NewCall(uint64_t* id, ProviderVerb verb, const std::string& reason);
  // The names for `count` new nodes of `t`: the lowest indices not in use.
  std::vector<std::string> FreeNames(const NodeTemplate& t, int count,
                                     const std::vector<std::string>& avoid) const;
  void Resume(const ScalePlan::Resume& r, TimePoint now);
  // Asks the provider to suspend `nodes` (their state `state`: suspending or failed).
  void Suspend(const std::vector<std::string>& names, ScaledNode::State state,
               const std::string& reason, TimePoint now);
  // A resume's nodes the provider did not start: failed, and suspended.
  void Fail(const std::vector<std::string>& names, const std::string& why, TimePoint now);
  void Listed(const ProviderAnswer& answer, TimePoint now);
  void Alert(EventKind kind, const std::string& node, const std::string& message, TimePoint now);
  // A provider_failed alert, unless the same was said of `verb` within kSaidAgain.
  void ProviderFailed(ProviderVerb verb, const std::string& node, const std::string& message,
                      TimePoint now);
  static constexpr Duration kSaidAgain = std::chrono::minutes(10);
  // From `now`, node `name` is in `use` for the project and user of `job` (none: the
  // cluster's own); its template's price from then on.
  void Charge(const std::string& name, NodeUse use, const Job* job, TimePoint now);
  // The same, for the project and user of the latest job seen on it, else those its open
  // stretch is for (idle after its boot: theirs).
  void ChargeAsBefore(const std::string& name, NodeUse use, TimePoint now);
  // What the rate still allows now, given the times of the latest ones.
  int Budget(std::deque<TimePoint>& times, int rate, TimePoint now) const;

  Shared shared_;
  std::map<std::string, Node> nodes_;
  std::map<uint64_t, Call> in_flight_;
  std::vector<ProviderCall> calls_;  // for the batch's effects
  uint64_t next_call_ = 1;
  bool listed_ = false;  // the provider has answered `list` once
  TimePoint next_scan_{};
  TimePoint last_scan_{};
  bool nudged_ = false;                        // jobs were submitted since the last scan
  std::deque<TimePoint> resumed_, suspended_;  // each node's time, for the rates
  std::map<ProviderVerb, std::pair<std::string, TimePoint>> failing_;  // said last, when
  std::map<JobId, std::string> notes_;  // NoteFor: the waiting jobs' of the last scan
};

}  // namespace baton::control
