// The durable state of the controller, behind one interface: load everything on start, then
// commit batches of changes. A Commit that returns Ok has reached stable storage; the
// controller acknowledges nothing before that.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/job.h"
#include "core/role.h"
#include "core/status.h"
#include "core/time.h"

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
  bool active = true;  // in a Batch: false removes it (undrain)
  bool operator==(const Drain&) const = default;
};

// An API token: who it acts as and with which role. The secret itself is never stored, only
// its SHA-256 (hex); a revoked token stays, so that its id is never handed out again.
struct Token {
  int64_t id = 0;
  std::string hash;  // SHA-256 of the secret, lowercase hex
  std::string user;
  Role role = Role::kUser;
  std::string name;  // what it is for ("laptop", "ci")
  TimePoint created_at{};
  bool revoked = false;
  bool operator==(const Token&) const = default;
};

// A stretch of an autoscaled node's life in one use, charged at its template's price (issue
// 40): a node costs from its resume to its suspend, whether it runs jobs or not. The stretches
// of a node tile its life; the open one (no `end`) is replaced whole when it closes.
struct NodeCharge {
  int64_t id = 0;  // ascending, never handed out twice
  std::string node;
  std::string template_name;
  // boot (resumed, not registered yet), idle (ready, no job), busy (jobs on it: they pay
  // their GPUs), failed (a resume that failed, until the provider has stopped it)
  std::string use;
  // Whose: boot and idle stretches are charged to the project and user of the job the node
  // was resumed for, or the last job that ran on it; "" for the cluster's own (its minimum).
  std::string project, user;
  bool spot = false;
  int64_t price_micros = 0;      // the whole node's, an hour
  int64_t on_demand_micros = 0;  // the same node on demand, an hour (what a fixed cluster pays)
  TimePoint start{};
  std::optional<TimePoint> end;
  bool operator==(const NodeCharge&) const = default;
};

// The cluster events a store keeps (GET /v1/events, `baton events`): the newest, at most.
inline constexpr size_t kKeptEvents = 10000;

struct Snapshot {
  std::vector<Job> jobs;    // ascending id
  int64_t next_job_id = 1;  // never handed out before
  std::vector<IdempotencyEntry> idempotency;
  std::vector<Drain> drains;             // active ones
  std::vector<Token> tokens;             // ascending id, revoked ones too
  std::vector<ClusterEvent> events;      // the newest kKeptEvents at most, ascending seq
  std::vector<NodeCharge> node_charges;  // ascending id
};

struct Batch {
  std::vector<Job> jobs;  // inserted or replaced whole
  std::optional<int64_t> next_job_id;
  std::vector<IdempotencyEntry> idempotency;
  std::vector<Drain> drains;  // applied in order
  std::vector<Token> tokens;  // inserted or replaced whole
  // Raised since the last batch, ascending seq: added, and the oldest beyond kKeptEvents go.
  std::vector<ClusterEvent> events;
  std::vector<NodeCharge> node_charges;  // inserted or replaced whole
  // Ids of stretches folded into others (NodeLedger::Compact): deleted, after the writes.
  std::vector<int64_t> node_charges_removed;
  bool empty() const {
    return jobs.empty() && !next_job_id && idempotency.empty() && drains.empty() &&
           tokens.empty() && events.empty() && node_charges.empty() && node_charges_removed.empty();
  }
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
