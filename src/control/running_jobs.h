// The controller's running jobs by id, in one sorted array: every scheduling pass reads all of
// them, in id order, and a tree's nodes are scattered over the heap. Starts and ends insert
// and erase in place (a few thousand pointers moved at most).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/job.h"

namespace baton::control {

class RunningJobs {
 public:
  using Entry = std::pair<JobId, Job*>;

  // As std::map's: nothing when `id` is there already.
  void emplace(JobId id, Job* job) {
    auto it = Find(id);
    if (it == entries_.end() || it->first != id) entries_.insert(it, Entry{id, job});
  }
  void erase(JobId id) {
    auto it = Find(id);
    if (it != entries_.end() && it->first == id) entries_.erase(it);
  }
  // The running job `id`; throws std::out_of_range when it does not run.
  Job* at(JobId id) const {
    auto it = Find(id);
    if (it == entries_.end() || it->first != id) throw std::out_of_range("not a running job");
    return it->second;
  }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  // Where `id` is or would go. Starts come mostly in id order: at the end.
  std::vector<Entry>::const_iterator Find(JobId id) const {
    if (entries_.empty() || entries_.back().first < id) return entries_.end();
    return std::lower_bound(entries_.begin(), entries_.end(), id,
                            [](const Entry& e, JobId id) { return e.first < id; });
  }
  std::vector<Entry> entries_;
};

}  // namespace baton::control
