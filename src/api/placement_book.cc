#include "api/placement_book.h"

#include <algorithm>
#include <mutex>

namespace baton::api {

void PlacementBook::Count(const Entry& e, int delta) {
  if (e.code.empty()) return;
  for (const std::string& node : e.nodes) {
    auto key = std::make_pair(e.code, node);
    int& n = code_nodes_[key];
    n += delta;
    if (n <= 0) code_nodes_.erase(key);
  }
}

void PlacementBook::Apply(const std::vector<Job>& jobs) {
  std::unique_lock lock(mu_);
  for (const Job& job : jobs) {
    auto it = jobs_.find(job.id.value);
    if (IsTerminal(job.state)) {
      if (it != jobs_.end()) {
        Count(it->second, -1);
        jobs_.erase(it);
      }
      continue;
    }
    if (job.allocation.empty() && it == jobs_.end()) continue;  // never placed
    if (it == jobs_.end()) it = jobs_.emplace(job.id.value, Entry{}).first;
    Entry& e = it->second;
    Count(e, -1);
    e.code = job.spec.code;
    for (const NodeAllocation& a : job.allocation) {
      if (std::find(e.nodes.begin(), e.nodes.end(), a.node) == e.nodes.end())
        e.nodes.push_back(a.node);
    }
    Count(e, +1);
  }
}

bool PlacementBook::Placed(JobId job, std::string_view node) const {
  std::shared_lock lock(mu_);
  auto it = jobs_.find(job.value);
  if (it == jobs_.end()) return false;
  const auto& nodes = it->second.nodes;
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

bool PlacementBook::HasCode(std::string_view code, std::string_view node) const {
  std::shared_lock lock(mu_);
  return code_nodes_.find(std::make_pair(std::string(code), std::string(node))) !=
         code_nodes_.end();
}

size_t PlacementBook::size() const {
  std::shared_lock lock(mu_);
  return jobs_.size();
}

}  // namespace baton::api
