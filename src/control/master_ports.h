// Where the processes of a job that meets over the network find each other: the rendezvous
// (MASTER_PORT) of each job's rank 0, and the step servers of batch scripts.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "control/running_jobs.h"
#include "core/job.h"

namespace baton::control {

// Where the processes of a multi-node or multi-process job meet: rank 0's node, at a port from
// torchrun's 29500 up. A job's port is DefaultMasterPort (29500 + id mod 10000) unless another
// running job already meets at that port on the same rank-0 node (by Baton's choice or its own
// MASTER_PORT); then the next free one, wrapping within the range. A job's own MASTER_PORT
// always wins in its environment.
constexpr int kFirstMasterPort = 29500;
constexpr int kMasterPorts = 10000;
int DefaultMasterPort(JobId id);
// Whether the job's processes meet over the network: more than one node, or one process per
// GPU on more than one GPU.
bool MeetsOverNetwork(const Job& job);
// The rendezvous ports in use, by rank-0 node: where each running multi-node or multi-process
// job meets, and the step servers of batch scripts listen (on every node of their job).
using PortsByNode = std::map<std::string, std::set<int>, std::less<>>;
PortsByNode MasterPortsInUse(const RunningJobs& running);
// The port the job starting now meets at, taken in `used` (its rank-0 node's): its own, else
// its default, else the next one of the range that no job there meets at.
int TakeMasterPort(const Job& job, std::set<int>& used);
// The port a batch script's step servers listen at, on every node of its allocation: the first
// after its master port that none of those nodes has in use, taken on each.
int TakeStepPort(const Job& job, PortsByNode& ports);

}  // namespace baton::control
