// What GET /v1/usage reports: GPU-seconds and cost by project and by user, and the decayed
// usage fair share orders by.
#pragma once

#include <cstdint>
#include <string>

namespace baton {

struct UsageRow {
  std::string project;
  std::string user;                 // "" in a project's row
  int64_t jobs = 0;                 // jobs submitted
  int64_t running = 0;              // jobs running now
  double gpu_seconds = 0;           // every attempt, running ones up to now
  double cost = 0;                  // in the GPU catalog's currency
  double fairshare_usage = 0;       // decayed GPU-seconds, as of the last scheduling pass
};

}  // namespace baton
