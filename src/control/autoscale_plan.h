// Autoscaling's decisions (issue 40), a function of what it is given alone: from the jobs that
// wait for resources, the node templates and the nodes autoscaling has made, which nodes to
// resume (bin-packed onto templates, within each template's maximum and the resume rate), which
// to suspend (idle for the idle time, never below a template's minimum), and which resumes
// failed (not registered within the resume timeout). The controller runs it at each scan and
// carries the plan out through the provider; `baton sim` runs the same code.
//
// The templates are the configuration's (core/policy.h NodeTemplate); control/autoscaler.h
// keeps the nodes and carries the plan out.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/job.h"
#include "core/policy.h"
#include "core/time.h"

namespace baton::control {

// A node autoscaling made, as it stands.
struct ScaledNode {
  enum class State { kResuming, kReady, kSuspending, kSuspended, kFailed };
  std::string name;
  std::string template_name;
  std::string provider_id;  // what the provider calls it ("i-0abc..."); "" until it says
  State state = State::kResuming;
  TimePoint since{};                    // when it entered its state
  bool busy = false;                    // ready and running a job
  std::optional<TimePoint> idle_since;  // ready and idle since then
  // Ready and taking jobs: what it has free now (whole GPUs, in milli), which a waiting job
  // (a gang's part) may count on; -1: nothing (not ready, or taking no jobs).
  int64_t free_milli = -1;
  int free_cpus = 0;
  int64_t free_memory = 0;
};

// A job waiting for resources, in queue order.
struct ScaleDemand {
  JobId job;
  std::string pool;
  Resources resources;
  bool preemptible = true;
  // Nodes it must not be given: its --exclude, and the nodes it could not start on. A node
  // of these names (coming or ready) is no capacity for it, and a resume for it names others.
  std::vector<std::string> exclude;
};

struct ScaleRules {
  Duration idle_time = std::chrono::minutes(10);
  Duration resume_timeout = std::chrono::minutes(10);
  int resume_budget = 20;   // nodes the resume rate still allows now
  int suspend_budget = 20;  // nodes the suspend rate still allows now
};

struct ScalePlan {
  // `count` nodes of `template_name` for `jobs` (none: its minimum).
  struct Resume {
    std::string template_name;
    int count = 0;
    std::vector<JobId> jobs;
    std::string reason;
    std::vector<std::string> avoid;  // names one of `jobs` must not be given
  };
  struct NodeReason {
    std::string node;
    std::string reason;
  };
  std::vector<Resume> resumes;
  std::vector<NodeReason> suspends;  // idle ones, and failed ones to clean up
  std::vector<NodeReason> failed;    // resumes that did not register in time
  // Jobs no template serves now, and why ("template h100 is at its max of 4 nodes").
  std::vector<std::pair<JobId, std::string>> unserved;
};

// Whether one node of `t` holds one node's part of a job of `pool` asking `r`; a job that is
// not preemptible never goes to a spot template.
bool TemplateHolds(const NodeTemplate& t, const std::string& pool, const Resources& r,
                   bool preemptible);

// The template whose nodes are named as `node` is (TEMPLATE-1 .. TEMPLATE-MAX), if any.
const NodeTemplate* TemplateOfNode(const std::vector<NodeTemplate>& templates,
                                   const std::string& node);

ScalePlan PlanScaling(const std::vector<NodeTemplate>& templates,
                      const std::vector<ScaledNode>& nodes, const std::vector<ScaleDemand>& waiting,
                      const ScaleRules& rules, TimePoint now);

}  // namespace baton::control
