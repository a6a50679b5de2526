// The durable state of the controller, behind one interface: load everything on start, then
// commit batches of changes. A Commit that returns Ok has reached stable storage; the
// controller acknowledges nothing before that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace baton::store {

// An Idempotency-Key a user sent with a submit, and the jobs it created (ids first..first+count-1).
struct IdempotencyEntry {
  std::string user;
  std::string key;
  JobId first;
  int count = 1;
  bool operator==(const IdempotencyEntry&) const = default;
};

// An admin's drain of a node (gpu = -1) or of one GPU, with the reason given.
struct Drain {
  std::string node;
  int gpu = -1;
  std::string reason;
  bool active = true;                        // in a Batch: false removes it (undrain)
  bool operator==(const Drain&) const = default;
};

struct Snapshot {
  std::vector<Job> jobs;                     // ascending id
  int64_t next_job_id = 1;                   // never handed out before
  std::vector<IdempotencyEntry> idempotency;
  std::vector<Drain> drains;                 // active ones
};

struct Batch {
  std::vector<Job> jobs;                     // inserted or replaced whole
  std::optional<int64_t> next_job_id;
  std::vector<IdempotencyEntry> idempotency;
  std::vector<Drain> drains;                 // applied in order
  bool empty() const { return jobs.empty() && !next_job_id && idempotency.empty() && drains.empty(); }
};

class Store {
 public:
  virtual ~Store() = default;
  // Reads the whole state. Called once, before any Commit.
  virtual Result<Snapshot> Load() = 0;
  // Applies `batch` atomically and durably: all of it or none of it.
  virtual Status Commit(const Batch& batch) = 0;
};

}  // namespace baton::store
