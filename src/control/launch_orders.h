// What the agents are told to start a job's attempt: one launch order per node of its
// allocation, each with the job's program, environment, resources and limits, and where its
// part stands in the gang (node rank, process ranks, world size, rank 0's address and port,
// the nodes' step servers of a batch script). A pure function of the job, the nodes and the
// policy; the Controller sends what it returns (again, to a node whose agent never had it, or
// with a new time limit: an agent takes a launch of what it runs as that).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "control/node_table.h"
#include "core/job.h"
#include "core/policy.h"
#include "core/protocol.h"

namespace baton::control {

// The launch orders of the job's current attempt, by node, in rank order; only rank
// `only_rank`'s when given. REQUIRES: the job has an allocation.
std::vector<std::pair<std::string, Order>> LaunchOrders(
    const Job& job, const NodeTable& nodes, const Policy& policy,
    std::optional<size_t> only_rank = std::nullopt);

}  // namespace baton::control
