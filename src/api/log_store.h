// Job logs as the controller keeps them: agents ship byte ranges of each job's output, and
// they land at their offsets in DIR/<job>/<node>.log, so a range sent twice is harmless. The
// lines a job appends to $BATON_METRICS_FILE travel the same way, to
// DIR/<job>/<node>.metrics.jsonl. Thread-safe: every call opens its own file descriptor. A log that
// does not exist yet is an empty one; any other failure to read is an Internal error, said in the
// log too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/status.h"

namespace baton::api {

// Which of a job's files on a node.
enum class LogStream { kOutput, kMetrics };

class LogStore {
 public:
  // What the store keeps at most: a log's bytes (past them, nothing: agents keep a job's
  // output within its limit, so only a faulty or hostile one sends more), and the free space
  // it leaves on the disk for the controller's store (writes that would eat into it are
  // dropped whole: the store must be able to commit whatever a job prints).
  struct Limits {
    int64_t max_log_bytes = INT64_MAX;
    int64_t disk_reserve = 0;
  };
  // What a write did not keep, and why.
  struct Dropped {
    int64_t bytes = 0;
    std::string why;
  };
  explicit LogStore(std::string dir);
  LogStore(std::string dir, Limits limits);

  // Writes `data` at `offset` of the job's log from `node`. Bytes past the limits are not
  // written (the write is still Ok): *dropped says how many and why.
  Status Write(JobId job, const std::string& node, int64_t offset, std::string_view data,
               LogStream stream = LogStream::kOutput, Dropped* dropped = nullptr);

  struct Chunk {
    std::string data;
    int64_t size = 0;  // the whole log's size now
  };
  // Up to `max` bytes from `offset` of the job's log from `node`; an empty log when none yet.
  Result<Chunk> Read(JobId job, const std::string& node, int64_t offset, size_t max,
                     LogStream stream = LogStream::kOutput) const;
  // Nodes that sent output for the job, most recently written first; none when none did.
  Result<std::vector<std::string>> Nodes(JobId job) const;

 private:
  std::string Path(JobId job, const std::string& node, LogStream stream) const;
  std::string dir_;
  Limits limits_;
};

}  // namespace baton::api
