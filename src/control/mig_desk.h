// MIG on demand (issue 42): the controller's side. Every Policy::mig_window the Controller
// gathers the MIG profiles its waiting jobs ask for (MigWanted), gives them and the GPUs whose
// agents re-plan MIG (NodeInfo::mig_gpus), as they are now (MigGpusOf), to the planner
// (sched::PlanMig), and orders each change it can make at once (MigOrderOf): the GPU is then
// `reconfiguring` (NodeRecord::mig_reconfiguring), none of its instances given to jobs, until its
// agent registers what the GPU has after the change (MigReported). A change that must wait for
// busy instances to end holds those from new jobs until the next window, which orders it once
// they are idle. A change that failed leaves its GPU alone for kMigFailedRest.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "control/node_table.h"
#include "control/running_jobs.h"
#include "core/event.h"
#include "sched/mig_plan.h"

namespace baton::control {

// How long an ordered change may go unreported before it is given up (its GPU back in use).
inline constexpr Duration kMigChangeTimeout = std::chrono::minutes(5);
// How long a GPU whose change failed is left out of the planning.
inline constexpr Duration kMigFailedRest = std::chrono::minutes(10);
// The waiting jobs a window looks at, at most, in queue order.
inline constexpr size_t kMigLook = 4096;

// The GPUs of ready nodes whose agents re-plan MIG, as the planner takes them: their instances
// (busy: a running job holds it, ending by its time limit if it has one), and whether a change
// is under way, failed lately, or cannot be planned (an instance whose place is not known).
std::vector<sched::MigGpu> MigGpusOf(const NodeTable& nodes, const RunningJobs& running,
                                     TimePoint now);

// The MIG profiles `waiting` jobs ask for by their gpu_type, one per GPU, in their order.
std::vector<std::string> MigWanted(const std::vector<const Job*>& waiting);

// The order that makes `change`.
Order MigOrderOf(const sched::MigChange& change);

// The node's GPU indices of `slices` of MIG GPU `physical`.
std::vector<int> MigIndices(const NodeInfo& info, int physical,
                            const std::vector<sched::MigInstance>& slices);

// "3g.40gb at 0, 1g.10gb at 4" ("none" for none).
std::string MigWords(const std::vector<MigSlice>& slices);

// `info` as it would be with each of its re-plannable MIG GPUs cut into as many instances of
// `profile` as it holds: what feasibility checks count for a job that asks for a profile.
NodeInfo MigCutFor(const NodeInfo& info, const std::string& profile);

// What a job waits for when it asks for a MIG profile (`spec`'s gpu_type) that no instance of
// its pool has, where a GPU of its pool is re-planned and could hold one: the words that say
// the next window cuts it (the scheduler, which sees only the instances there are, would say
// no node can ever hold it). None when the job asks for no profile or no such GPU is there.
std::optional<std::string> MigCutWords(const NodeTable& nodes, const JobSpec& spec,
                                       Duration window);

// A registration after a change of `physical` was ordered: whether the GPU has now what the
// change was to create (then the change is done, else it failed), said as an event.
ClusterEvent MigReported(const std::string& node, int physical, const NodeRecord::MigOrdered& o,
                         const NodeInfo& info, TimePoint now, bool* done);

}  // namespace baton::control
