// Code snapshots (`baton submit --code DIR`): the gzipped tar archives users upload
// (POST /v1/code), kept under DIR/<sha256>.tar.gz, named by their SHA-256, written whole and
// fsynced before their id is answered, so that a job that names one never names a snapshot
// that a crash lost. The same snapshot uploaded twice is kept once.
//
// Bounded: each user's snapshots count against a quota (DIR/<sha256>.owners says whose they
// are; one two users uploaded counts for both), and a snapshot that no job which has not ended
// uses is deleted once the retention has passed since it was uploaded or a job using it
// ended. The controller's commits feed it which jobs use which snapshot (Track). Blocking
// file I/O, on the HTTP threads, as the log store's. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/job.h"
#include "core/status.h"
#include "core/time.h"

namespace baton::api {

struct CodeLimits {
  int64_t per_user_bytes = int64_t{10} << 30;       // --code-quota
  Duration retention = std::chrono::hours(24 * 7);  // --code-retention
};

class CodeStore {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;  // an archive, compressed
  // What it may unpack to: the CLI's largest snapshot (512 MiB of files) and tar's headers.
  static constexpr uint64_t kMaxUnpackedBytes = uint64_t{1} << 30;

  // Reads what DIR keeps (sizes, owners, and each archive's time as its last use).
  explicit CodeStore(std::string dir, CodeLimits limits = {});
  // Keeps `archive` (a gzip stream) for `user`; its id. Past the user's quota: Conflict,
  // saying how much the user's snapshots take and when unused ones go.
  Result<std::string> Put(std::string_view archive, const std::string& user, TimePoint now);
  bool Has(const std::string& id) const;
  Result<std::string> Get(const std::string& id) const;

  // The jobs of the store's snapshot or of a committed batch, whole: a job that has not ended
  // keeps its snapshot; its end starts the snapshot's retention anew.
  void Track(const std::vector<Job>& jobs, TimePoint now);
  // Deletes every snapshot no job that has not ended uses, last used more than the retention
  // before `now`. Returns how many.
  int Collect(TimePoint now);
  // What `user`'s snapshots take.
  int64_t UserBytes(const std::string& user) const;
  const CodeLimits& limits() const { return limits_; }

 private:
  struct Snapshot {
    int64_t bytes = 0;
    std::set<std::string> owners;
    int refs = 0;  // jobs that have not ended
    TimePoint last_used{};
  };
  static Status CheckWhole(std::string_view archive);
  std::string PathOf(const std::string& id) const { return dir_ + "/" + id + ".tar.gz"; }
  std::string OwnersOf(const std::string& id) const { return dir_ + "/" + id + ".owners"; }
  int64_t UserBytesLocked(const std::string& user) const;
  int CollectLocked(TimePoint now);

  std::string dir_;
  CodeLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Snapshot, std::less<>> snapshots_;
  std::unordered_map<int64_t, std::string> job_code_;  // jobs that have not ended
};

}  // namespace baton::api
