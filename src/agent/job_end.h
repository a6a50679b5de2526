// How a job's end is told to the controller: what its shim wrote in its status file (or
// nothing, when the shim died without a word), with what the node knows of the job, made the
// kExited event. The agent reads the files and the cgroup, and reports the event
// (agent.cc: CollectExits).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agent/executor.h"
#include "core/protocol.h"

namespace baton::agent {

struct EndFacts {
  // The shim's status file; none: the shim died without a word (killed), and the job's fate
  // is unknown: it is lost.
  std::optional<ExitStatus> status;
  bool timed_out = false;   // its StopClock stopped it at its time limit
  std::string shims_words;  // it never started: the shim's last "baton: ..." line in its log
  int64_t fence_ms = 0;     // the fence, said when the fence stopped it
  bool oom_killed = false;  // its cgroup counted an out-of-memory kill
};

// The kExited event of the job of `order` on node `node` at `now`. Its message says the most
// telling of: an out-of-memory kill, its fence, the shim's words for a job that never started.
JobEvent EndEvent(const LaunchOrder& order, const EndFacts& facts, const std::string& node,
                  TimePoint now);

// The words of an out-of-memory kill at the job's memory limit (0: none), as the event and
// the job's log say it.
std::string OomWords(int64_t memory_bytes);

}  // namespace baton::agent
