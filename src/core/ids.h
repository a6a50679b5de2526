// Strong identifiers. A JobId is handed out once, by the controller, and never reused.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace baton {

struct JobId {
  int64_t value = 0;
  auto operator<=>(const JobId&) const = default;
  std::string ToString() const { return std::to_string(value); }
};

// One run of a job on its nodes: attempt 0, then one more for each requeue. Agents key what
// runs by it; names made of it (cgroups, containers, run files) read "ID.ATTEMPT".
struct JobAttempt {
  JobId job;
  int attempt = 0;
  auto operator<=>(const JobAttempt&) const = default;
  std::string ToString() const { return job.ToString() + "." + std::to_string(attempt); }
};

}  // namespace baton

template <>
struct std::hash<baton::JobId> {
  size_t operator()(const baton::JobId& id) const noexcept {
    return std::hash<int64_t>{}(id.value);
  }
};
