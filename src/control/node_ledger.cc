#include "control/node_ledger.h"

#include <algorithm>
#include <cmath>

namespace baton::control {

namespace {

int64_t Micros(double money) { return static_cast<int64_t>(std::llround(money * 1e6)); }

// The cost of `seconds` at `price_micros` an hour, in the currency.
double CostOf(int64_t price_micros, double seconds) {
  return static_cast<double>(price_micros) / 1e6 * seconds / 3600.0;
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

bool Charged(const store::NodeCharge& c) { return c.use == "boot" || c.use == "idle"; }

}  // namespace

double OnDemandPrice(const std::vector<NodeTemplate>& templates, const NodeTemplate& t) {
  if (!t.spot) return t.price_per_hour;
  if (t.on_demand_price >= 0) return t.on_demand_price;
  double best = -1;
  for (const NodeTemplate& o : templates) {
    if (!o.spot && o.gpu_spec == t.gpu_spec && (best < 0 || o.price_per_hour < best))
      best = o.price_per_hour;
  }
  return best >= 0 ? best : t.price_per_hour;
}

const char* NodeLedger::UseName(NodeUse use) {
  switch (use) {
    case NodeUse::kBoot:
      return "boot";
    case NodeUse::kIdle:
      return "idle";
    case NodeUse::kBusy:
      return "busy";
    case NodeUse::kFailed:
      return "failed";
  }
  return "idle";
}

void NodeLedger::Restore(std::vector<store::NodeCharge> charges) {
  charges_ = std::move(charges);
  open_.clear();
  changed_.clear();
  for (size_t i = 0; i < charges_.size(); ++i) {
    store::NodeCharge& c = charges_[i];
    next_id_ = std::max(next_id_, c.id + 1);
    if (c.end) continue;
    // Two open stretches of one node (never written so): the older ends where the newer began.
    if (auto it = open_.find(c.node); it != open_.end()) {
      charges_[it->second].end = c.start;
      changed_.insert(it->second);
    }
    open_[c.node] = i;
  }
}

void NodeLedger::Use(const std::string& node, const NodeTemplate& t,
                     const std::vector<NodeTemplate>& templates, NodeUse use,
                     const std::string& project, const std::string& user, TimePoint now) {
  const std::string name = UseName(use);
  if (auto it = open_.find(node); it != open_.end()) {
    store::NodeCharge& c = charges_[it->second];
    if (c.use == name && c.project == project && c.user == user) return;
    if (c.start >= now) {  // nothing of it has passed: it is this use after all
      c.use = name;
      c.project = project;
      c.user = user;
      changed_.insert(it->second);
      return;
    }
    c.end = now;
    changed_.insert(it->second);
  }
  charges_.push_back(store::NodeCharge{.id = next_id_++,
                                       .node = node,
                                       .template_name = t.name,
                                       .use = name,
                                       .project = project,
                                       .user = user,
                                       .spot = t.spot,
                                       .price_micros = Micros(t.price_per_hour),
                                       .on_demand_micros = Micros(OnDemandPrice(templates, t)),
                                       .start = now});
  open_[node] = charges_.size() - 1;
  changed_.insert(charges_.size() - 1);
}

void NodeLedger::End(const std::string& node, TimePoint now) {
  auto it = open_.find(node);
  if (it == open_.end()) return;
  charges_[it->second].end = std::max(now, charges_[it->second].start);
  changed_.insert(it->second);
  open_.erase(it);
}

const store::NodeCharge* NodeLedger::Open(const std::string& node) const {
  auto it = open_.find(node);
  return it == open_.end() ? nullptr : &charges_[it->second];
}

std::vector<std::string> NodeLedger::OpenNodes() const {
  std::vector<std::string> nodes;
  for (const auto& [node, i] : open_) nodes.push_back(node);
  return nodes;
}

std::vector<store::NodeCharge> NodeLedger::TakeChanged() {
  std::vector<store::NodeCharge> out;
  out.reserve(changed_.size());
  for (size_t i : changed_) out.push_back(charges_[i]);
  changed_.clear();
  return out;
}

std::map<NodeLedger::Owner, int64_t> NodeLedger::IdleCost(TimePoint since, TimePoint until) const {
  std::map<Owner, double> cost;
  for (const store::NodeCharge& c : charges_) {
    if (!Charged(c) || c.project.empty()) continue;
    const TimePoint s = std::max(c.start, since);
    const TimePoint e = std::min(c.end.value_or(until), until);
    if (e <= s) continue;
    const double money = CostOf(c.price_micros, Seconds(e - s));
    cost[{c.project, ""}] += money;
    cost[{c.project, c.user}] += money;
  }
  std::map<Owner, int64_t> out;
  for (const auto& [owner, money] : cost) out[owner] = Micros(money);
  return out;
}

std::optional<NodeCosts> NodeLedger::Costs(std::optional<TimePoint> since,
                                           std::optional<TimePoint> until, TimePoint now) const {
  const TimePoint hi = until.value_or(now);
  TimePoint lo = since.value_or(TimePoint::max());
  if (!since) {
    for (const store::NodeCharge& c : charges_) lo = std::min(lo, c.start);
  }
  if (lo >= hi) return std::nullopt;
  struct Row {
    NodeCostRow row;
    int64_t on_demand_micros = 0;
    std::vector<std::pair<TimePoint, int>> steps;  // +1 a node's stretch begins, -1 it ends
  };
  std::map<std::string, Row> rows;
  for (const store::NodeCharge& c : charges_) {
    const TimePoint s = std::max(c.start, lo);
    const TimePoint e = std::min(c.end.value_or(now), hi);
    if (e <= s) continue;
    Row& r = rows[c.template_name];
    r.row.template_name = c.template_name;
    r.row.spot = c.spot;
    const double seconds = Seconds(e - s);
    r.row.node_seconds += seconds;
    r.row.cost += CostOf(c.price_micros, seconds);
    if (c.use != "busy") r.row.idle_cost += CostOf(c.price_micros, seconds);
    r.on_demand_micros = std::max(r.on_demand_micros, c.on_demand_micros);
    r.steps.push_back({s, +1});
    r.steps.push_back({e, -1});
  }
  if (rows.empty()) return std::nullopt;
  NodeCosts out;
  out.window_seconds = Seconds(hi - lo);
  for (auto& [name, r] : rows) {
    // The most nodes up at once: a stretch that ends where the node's next begins is one node.
    std::sort(r.steps.begin(), r.steps.end());
    int up = 0;
    for (const auto& [at, step] : r.steps) {
      up += step;
      r.row.peak_nodes = std::max(r.row.peak_nodes, up);
    }
    r.row.fixed_cost = CostOf(r.on_demand_micros, out.window_seconds) * r.row.peak_nodes;
    out.node_seconds += r.row.node_seconds;
    out.cost += r.row.cost;
    out.idle_cost += r.row.idle_cost;
    out.fixed_cost += r.row.fixed_cost;
    out.templates.push_back(r.row);
  }
  return out;
}

}  // namespace baton::control
