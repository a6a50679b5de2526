// What each node may speak for: the jobs placed on it that have not ended (with every node an
// earlier attempt of them ran on, until they end), and their code snapshots. The controller's
// commits feed it (Apply, on the loop's thread, before any order that names a placement
// leaves); the HTTP threads ask it before a node's report writes a byte of a job's output and
// before a node fetches a code snapshot, so that a node's credential reaches only the jobs
// placed on it (docs/security.md, "Security model"). Thread-safe.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/job.h"

namespace baton::api {

class PlacementBook {
 public:
  // The jobs of a snapshot or of a committed batch, whole.
  void Apply(const std::vector<Job>& jobs);
  // Whether `job` is (or, in an attempt of a job that has not ended, was) placed on `node`.
  bool Placed(JobId job, std::string_view node) const;
  // Whether a job placed on `node` runs the code snapshot `code`.
  bool HasCode(std::string_view code, std::string_view node) const;
  size_t size() const;

 private:
  struct Entry {
    std::vector<std::string> nodes;
    std::string code;
  };
  void Count(const Entry& e, int delta);  // code_nodes_, mu_ held

  mutable std::shared_mutex mu_;
  std::unordered_map<int64_t, Entry> jobs_;
  std::map<std::pair<std::string, std::string>, int, std::less<>> code_nodes_;  // (code, node)
};

}  // namespace baton::api
