// The money of autoscaled nodes (issue 40; docs/operations.md "What autoscaled nodes cost"):
// each node's life from its resume to its suspend, in stretches of one use (store::NodeCharge)
// charged at its template's price. Jobs on a node pay for their GPUs as anywhere (job_cost.h);
// the stretches with no job on it (booting for a job, idle after one) are charged to the
// project and user the node was kept for, so that budgets and `baton usage` see them; and the
// report says what the same work would have cost on a fixed, on-demand cluster.
//
// The stretches are stored (a batch's `node_charges`), so that a controller started again
// continues each open one: a node keeps costing while no controller runs. Autoscaler (its only
// writer) says each change of use; the ledger closes the open stretch and opens the next.
// Owned by the Controller; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/policy.h"
#include "core/time.h"
#include "core/usage.h"
#include "store/store.h"

namespace baton::control {

// What a node of `t` costs an hour on demand: a spot template's own on_demand_price, else the
// cheapest template that is not spot with the same GPUs, else its own price.
double OnDemandPrice(const std::vector<NodeTemplate>& templates, const NodeTemplate& t);

// What a node is doing in a stretch of its life (store::NodeCharge::use).
enum class NodeUse { kBoot, kIdle, kBusy, kFailed };

class NodeLedger {
 public:
  static const char* UseName(NodeUse use);

  // From the store: the stretches as committed, the open ones continued.
  void Restore(std::vector<store::NodeCharge> charges);

  // From `now`, `node` (of `t`, among `templates`) is in `use` for `project`/`user` ("" for
  // the cluster's own): its open stretch closes and a new one opens, unless nothing changed.
  void Use(const std::string& node, const NodeTemplate& t,
           const std::vector<NodeTemplate>& templates, NodeUse use, const std::string& project,
           const std::string& user, TimePoint now);
  // `node` stopped costing at `now` (the provider suspended it, or it is gone).
  void End(const std::string& node, TimePoint now);
  // `node`'s open stretch, if any.
  const store::NodeCharge* Open(const std::string& node) const;
  std::vector<std::string> OpenNodes() const;

  // The stretches changed since the last call, for the batch's store writes.
  std::vector<store::NodeCharge> TakeChanged();

  // Per project (user ""), and per project and user: the cost of the stretches with no job
  // (boot, idle) charged to them within [since, until), in micro-units.
  using Owner = std::pair<std::string, std::string>;
  std::map<Owner, int64_t> IdleCost(TimePoint since, TimePoint until) const;
  // Per project: the same from `since` (a UTC midnight) to `now`, from per-day totals of the
  // closed stretches and the open ones: what budgets read every tick, without walking every
  // stretch the cluster ever had.
  std::map<std::string, int64_t> IdleCostSince(TimePoint since, TimePoint now) const;
  // The window's money by template; none when no stretch falls in it.
  std::optional<NodeCosts> Costs(std::optional<TimePoint> since, std::optional<TimePoint> until,
                                 TimePoint now) const;

  // Folds each node's closed stretches of every UTC day before `before` (a midnight) into one
  // stretch per use, owner and price, laid end to end from the node's first start that day,
  // so that the ledger and its table stop growing with every change of use. A day's money,
  // node-hours and whose they are stay exact; when within the day they were spent, and so a
  // window cut inside the day and the most nodes up at once that day, do not. Only days with
  // two stretches to fold change; a stretch across midnight is cut there when it is folded.
  // Does nothing when `before` is not later than at the last call.
  void Compact(TimePoint before);
  // Ids of the stretches folded away since the last call, for the batch's store deletes.
  std::vector<int64_t> TakeRemoved();

  const std::vector<store::NodeCharge>& charges() const { return charges_; }

 private:
  void Closed(const store::NodeCharge& c);  // into idle_by_day_
  void Reindex();                           // open_ and idle_by_day_ from charges_

  std::vector<store::NodeCharge> charges_;  // ascending id
  std::map<std::string, size_t> open_;      // node -> its open stretch
  // UTC day (days since 1970) -> project -> the money of its closed boot and idle stretches.
  std::map<int64_t, std::map<std::string, double>> idle_by_day_;
  std::set<int64_t> changed_;  // ids
  std::vector<int64_t> removed_;
  TimePoint compacted_before_{};
  int64_t next_id_ = 1;
};

}  // namespace baton::control
