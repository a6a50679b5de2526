#include "control/node_ledger.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

namespace baton::control {

namespace {

int64_t Micros(double money) { return static_cast<int64_t>(std::llround(money * 1e6)); }

// The cost of `seconds` at `price_micros` an hour, in the currency.
double CostOf(int64_t price_micros, double seconds) {
  return static_cast<double>(price_micros) / 1e6 * seconds / 3600.0;
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

bool Charged(const store::NodeCharge& c) { return c.use == "boot" || c.use == "idle"; }

int64_t DayOf(TimePoint t) {
  return std::chrono::floor<std::chrono::days>(t).time_since_epoch().count();
}

TimePoint DayStart(int64_t day) { return TimePoint{} + std::chrono::days(day); }

// Calls fn(day, from, to) for each UTC day's part of [start, end).
template <typename Fn>
void ForEachDay(TimePoint start, TimePoint end, Fn fn) {
  for (TimePoint s = start; s < end;) {
    const int64_t day = DayOf(s);
    const TimePoint e = std::min(end, DayStart(day + 1));
    fn(day, s, e);
    s = e;
  }
}

// What two stretches of one node must share to be folded into one.
auto FoldKey(const store::NodeCharge& c) {
  return std::tie(c.template_name, c.use, c.project, c.user, c.spot, c.price_micros,
                  c.on_demand_micros);
}

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
  changed_.clear();
  removed_.clear();
  compacted_before_ = TimePoint{};
  std::map<std::string, size_t> open;
  for (size_t i = 0; i < charges_.size(); ++i) {
    store::NodeCharge& c = charges_[i];
    next_id_ = std::max(next_id_, c.id + 1);
    if (c.end) continue;
    // Two open stretches of one node (never written so): the older ends where the newer began.
    if (auto it = open.find(c.node); it != open.end()) {
      charges_[it->second].end = std::max(c.start, charges_[it->second].start);
      changed_.insert(charges_[it->second].id);
    }
    open[c.node] = i;
  }
  Reindex();
}

void NodeLedger::Reindex() {
  open_.clear();
  idle_by_day_.clear();
  for (size_t i = 0; i < charges_.size(); ++i) {
    if (charges_[i].end) {
      Closed(charges_[i]);
    } else {
      open_[charges_[i].node] = i;
    }
  }
}

void NodeLedger::Closed(const store::NodeCharge& c) {
  if (!Charged(c) || c.project.empty() || !c.end) return;
  ForEachDay(c.start, *c.end, [&](int64_t day, TimePoint s, TimePoint e) {
    idle_by_day_[day][c.project] += CostOf(c.price_micros, Seconds(e - s));
  });
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
      changed_.insert(c.id);
      return;
    }
    c.end = now;
    changed_.insert(c.id);
    Closed(c);
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
  changed_.insert(charges_.back().id);
}

void NodeLedger::End(const std::string& node, TimePoint now) {
  auto it = open_.find(node);
  if (it == open_.end()) return;
  store::NodeCharge& c = charges_[it->second];
  c.end = std::max(now, c.start);
  changed_.insert(c.id);
  Closed(c);
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
  for (int64_t id : changed_) {
    auto it = std::lower_bound(charges_.begin(), charges_.end(), id,
                               [](const store::NodeCharge& c, int64_t v) { return c.id < v; });
    if (it != charges_.end() && it->id == id) out.push_back(*it);
  }
  changed_.clear();
  return out;
}

std::vector<int64_t> NodeLedger::TakeRemoved() { return std::exchange(removed_, {}); }

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

std::map<std::string, int64_t> NodeLedger::IdleCostSince(TimePoint since, TimePoint now) const {
  std::map<std::string, int64_t> out;
  if (DayStart(DayOf(since)) != since) {  // not a midnight: the walk of every stretch
    for (const auto& [owner, money] : IdleCost(since, now)) {
      if (owner.second.empty()) out[owner.first] = money;
    }
    return out;
  }
  std::map<std::string, double> cost;
  for (auto day = idle_by_day_.lower_bound(DayOf(since)); day != idle_by_day_.end(); ++day) {
    for (const auto& [project, money] : day->second) cost[project] += money;
  }
  for (const auto& [node, i] : open_) {
    const store::NodeCharge& c = charges_[i];
    if (!Charged(c) || c.project.empty() || now <= std::max(c.start, since)) continue;
    cost[c.project] += CostOf(c.price_micros, Seconds(now - std::max(c.start, since)));
  }
  for (const auto& [project, money] : cost) out[project] = Micros(money);
  return out;
}

void NodeLedger::Compact(TimePoint before) {
  if (before <= compacted_before_) return;
  compacted_before_ = before;
  // The pieces of the closed stretches that ended by `before`, per node and UTC day.
  struct Piece {
    size_t source;
    TimePoint start, end;
  };
  std::map<std::pair<std::string, int64_t>, std::vector<Piece>> days;
  for (size_t i = 0; i < charges_.size(); ++i) {
    const store::NodeCharge& c = charges_[i];
    if (!c.end || *c.end > before) continue;
    ForEachDay(c.start, *c.end, [&](int64_t day, TimePoint s, TimePoint e) {
      days[{c.node, day}].push_back(Piece{i, s, e});
    });
  }
  // A day is folded when two of its pieces would be one stretch.
  std::set<std::pair<std::string, int64_t>> folded_days;
  std::set<size_t> folded;  // sources with a piece in a folded day
  std::vector<store::NodeCharge> made;
  for (auto& [node_day, pieces] : days) {
    std::set<decltype(FoldKey(charges_[0]))> keys;
    bool fold = false;
    for (const Piece& p : pieces) fold |= !keys.insert(FoldKey(charges_[p.source])).second;
    if (!fold) continue;
    folded_days.insert(node_day);
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.start < b.start; });
    // One stretch per key, in the order of their first start, end to end.
    std::vector<std::pair<store::NodeCharge, Duration>> groups;
    for (const Piece& p : pieces) {
      folded.insert(p.source);
      const store::NodeCharge& c = charges_[p.source];
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const auto& x) { return FoldKey(x.first) == FoldKey(c); });
      if (g == groups.end()) {
        groups.push_back({c, Duration(0)});
        g = groups.end() - 1;
      }
      g->second += p.end - p.start;
    }
    TimePoint at = pieces.front().start;
    for (auto& [c, length] : groups) {
      c.id = next_id_++;
      c.start = at;
      c.end = at + length;
      at = *c.end;
      made.push_back(std::move(c));
    }
  }
  if (folded.empty()) return;
  // A folded stretch's parts on days that are not folded stay, each a stretch of its own.
  for (const auto& [node_day, pieces] : days) {
    if (folded_days.count(node_day) != 0) continue;
    for (const Piece& p : pieces) {
      if (folded.count(p.source) == 0) continue;
      store::NodeCharge c = charges_[p.source];
      c.id = next_id_++;
      c.start = p.start;
      c.end = p.end;
      made.push_back(std::move(c));
    }
  }
  std::vector<store::NodeCharge> kept;
  kept.reserve(charges_.size() - folded.size() + made.size());
  for (size_t i = 0; i < charges_.size(); ++i) {
    if (folded.count(i) == 0) {
      kept.push_back(std::move(charges_[i]));
      continue;
    }
    removed_.push_back(charges_[i].id);
    changed_.erase(charges_[i].id);
  }
  for (store::NodeCharge& c : made) {
    changed_.insert(c.id);
    kept.push_back(std::move(c));
  }
  charges_ = std::move(kept);
  Reindex();
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
