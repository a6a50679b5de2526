// The agent <-> controller protocol as values (codec/ turns them into JSON). Agents register,
// long-poll for orders and post reports. Orders carry sequence numbers and are idempotent:
// a duplicated launch or stop of the same (job, attempt) is harmless.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/job.h"
#include "core/mig.h"
#include "core/node.h"
#include "core/time.h"

namespace baton {

struct LaunchOrder {
  JobId job;
  int attempt = 0;       // the job's restart count when launched
  JobId array_id;        // a task of a job array: the array's id (0: none) ...
  int array_index = -1;  // ... and the task's index (BATON_ARRAY_JOB_ID, BATON_ARRAY_INDEX)
  std::string name;
  std::string user;
  std::vector<std::string> command;
  bool shell = false;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;
  std::string checkpoint_dir;    // BATON_CHECKPOINT_DIR when the cluster has a shared root
  std::string checkpoint_group;  // a Unix group that may read it (its project's); "": none
  int64_t output_limit = 0;      // the most of its output the node keeps; 0: all
  std::string best_metric;       // JobSpec::best_metric: the metric its agent reports
  std::string venv;              // JobSpec::venv
  std::string conda;             // JobSpec::conda
  std::string code;              // JobSpec::code: the snapshot the job runs in (its workdir)
  std::string image;             // JobSpec::image: the container image it runs in
  Interactive interactive = Interactive::kNone;  // JobSpec::interactive (node rank 0 only)
  std::vector<int> gpus;                         // GPU indices on this node
  int64_t milli_per_gpu = 1000;                  // < 1000: a fractional share run under MPS limits
  int64_t gpu_memory_bytes = 0;                  // the share's memory limit when fractional
  int cpus = 0;              // CPU cores on this node (cgroup cpu.max); 0 = unlimited
  int64_t memory_bytes = 0;  // memory on this node (cgroup memory.max); 0 = unlimited
  Duration time_limit{0};    // 0 = none
  Duration grace_period{0};
  int signal = 0;             // the job's notice signal (JobSpec::signal); 0 = none
  Duration signal_before{0};  // ... sent this long before the time limit
  bool signal_shell = false;  // ... to a batch script's shell alone (JobSpec::signal_shell)
  std::string nodelist;       // comma-separated node names of the whole job
  int node_rank = 0;
  int num_nodes = 1;
  // Rendezvous (PRODUCT §4): where rank 0 listens, and this node's processes: `processes` of
  // them (one per GPU when asked), ranks rank_offset .. rank_offset + processes - 1 of
  // world_size.
  std::string master_addr;
  int master_port = 0;
  int processes = 1;
  int rank_offset = 0;
  int world_size = 1;
  // A batch script (JobSpec::batch): node rank 0 runs the command; the others run a step server
  // at each node_addrs[rank]:step_port that takes the tasks srun sends with step_key.
  bool batch = false;
  bool slurm_env = false;   // JobSpec::slurm_env, unless its pool turns it off
  std::string output_file;  // JobSpec::output_file, error_file (node rank 0)
  std::string error_file;
  int tasks_per_node = 0;  // JobSpec::tasks_per_node
  std::vector<std::string> node_addrs;
  int step_port = 0;
  std::string step_key;
  // An allocation (JobSpec::alloc): node rank 0 runs baton-slurm's allocation host, which takes
  // the `baton run --in` commands at node_addrs[0]:step_port, as the other nodes' step servers.
  bool alloc = false;
  bool operator==(const LaunchOrder&) const = default;
};

enum class StopReason { kCancel, kPreempt, kTimeLimit, kNodeFailure };
std::string_view StopReasonName(StopReason r);

struct StopOrder {
  JobId job;
  int attempt = 0;
  StopReason reason = StopReason::kCancel;
  Duration grace_period{0};  // SIGTERM, grace, SIGKILL
  bool operator==(const StopOrder&) const = default;
};

// The faults FaultInjection carries: xid | temperature | ecc | lost | clear (a reset), or
// silence: the agent stops talking to the controller for `duration` (lost heartbeats) while
// its jobs run on.
enum class FaultKind { kXid, kTemperature, kEcc, kLost, kClear, kSilence };
inline constexpr std::array<std::string_view, 6> kFaultKindNames = {
    "xid", "temperature", "ecc", "lost", "clear", "silence"};
inline std::string_view FaultKindName(FaultKind k) { return EnumName(kFaultKindNames, k); }

// A fault injected into a simulated GPU, for tests and failure drills. Real GPUs refuse it.
struct FaultInjection {
  int gpu = 0;
  FaultKind fault = FaultKind::kXid;
  int64_t value = 0;     // the XID, the degrees Celsius, or the ECC errors
  Duration duration{0};  // how long it lasts (as if reset then); 0 = until cleared
  bool operator==(const FaultInjection&) const = default;
};

// A byte stream from a client to a running job (`baton run`, `attach`, `forward`), which the
// controller's HTTP server relays (api/relay.h): the agent opens /v1/agent/tunnels/{id} there
// and connects it to the job's session (port 0: its terminal or stdin) or to a TCP port the
// job listens on at this node's loopback.
struct TunnelOrder {
  std::string id;  // 32 hex digits, unguessable: names the tunnel's two ends
  JobId job;
  int attempt = 0;
  int port = 0;
  // To an allocation's host (`baton run --in`): the agent sends the head of a step request with
  // this key (core/step_wire.h) before the client's bytes. "": a plain port or a session.
  std::string step_key;
  bool operator==(const TunnelOrder&) const = default;
};

// A line for the terminal of a session (an idle session's warning): the agent hands it to the
// job's shim, which shows it to the attached client and keeps it in the job's log.
struct SessionNote {
  JobId job;
  int attempt = 0;
  std::string message;
  bool operator==(const SessionNote&) const = default;
};

// A change of one MIG GPU's instances (issue 42), which its agent makes and then registers
// again with what the GPU has: `destroy` (each with its compute instances), then `create`.
struct MigOrder {
  int physical = 0;  // the GPU (MigParent::physical)
  std::vector<MigSlice> destroy;
  std::vector<MigSlice> create;
  bool operator==(const MigOrder&) const = default;
};

struct Order {
  // kReadmit: an admin returned GPU `inject.gpu` to service; the agent forgets its fault.
  enum class Kind { kLaunch, kStop, kInject, kReadmit, kTunnel, kNote, kMig };
  uint64_t seq = 0;
  // The leading controller's epoch (its lease's fencing token; 0 from a controller with no
  // lease): an agent refuses orders of an epoch older than one it has seen.
  int64_t epoch = 0;
  Kind kind = Kind::kLaunch;
  LaunchOrder launch;     // when kind == kLaunch
  StopOrder stop;         // when kind == kStop
  FaultInjection inject;  // when kind == kInject (kReadmit: its gpu)
  TunnelOrder tunnel;     // when kind == kTunnel
  SessionNote note;       // when kind == kNote
  MigOrder mig;           // when kind == kMig
};

// What an agent says of one job: it started, or it ended and how.
struct JobEvent {
  // checkpoint: message = its path; metric: a value of the job's tracked metric (value, step,
  // and message = the checkpoint of its line, or the latest before it); output_limit: its output
  // passed its limit on the node (message says what is kept)
  enum class Kind { kStarted, kExited, kCheckpoint, kMetric, kOutputLimit };
  JobId job;
  int attempt = 0;
  Kind kind = Kind::kStarted;
  TimePoint at{};
  int exit_code = 0;           // when exited normally
  int signal = 0;              // when killed by a signal
  bool timed_out = false;      // the agent stopped it at its time limit
  bool lost = false;           // the agent could not find out how it ended
  bool launch_failed = false;  // it never started (no such user, workdir, program; refused)
  std::string message;         // e.g. "cannot execute 'foo': No such file"
  // started, a fractional job's: what caps its share of its GPU, "mps" (its GPU's MPS daemon)
  // or "none" (only its CUDA_MPS_* variables ask it to keep to it); "" for whole GPUs.
  std::string gpu_sharing;
  double value = 0;   // metric
  int64_t step = -1;  // metric: the line's step, -1 none
};

struct LogChunk {
  JobId job;
  int64_t offset = 0;  // where `data` starts in the job's log
  std::string data;
  // Of the job's $BATON_METRICS_FILE rather than its output: whole lines (the last chunk of an
  // ended job may end without a newline), kept beside its log for the dashboard's charts.
  bool metrics = false;
};

// Something an agent saw on a GPU that leaves the GPU in service: an XID the catalog puts down
// to the application (a job's bad memory access), told so that it shows up in the events.
struct GpuNotice {
  int gpu = 0;
  int xid = 0;
  std::string message;  // "xid 31: GPU memory page fault (the application's)"
  TimePoint at{};
  bool operator==(const GpuNotice&) const = default;
};

// A spot node's reclaim notice (`baton agent --reclaim-notice`): its cloud's metadata (or a
// file) says the node is taken back at `deadline`. The agent has begun stopping its jobs (SIGTERM
// now, SIGKILL at the deadline) and says so in every report and registration from then on.
struct ReclaimNotice {
  std::string source;  // "aws", "gcp" or "file"
  TimePoint seen{};    // when the agent saw it
  TimePoint deadline{};
  bool operator==(const ReclaimNotice&) const = default;
};

struct RegisterRequest {
  NodeInfo node;
  std::optional<ReclaimNotice> reclaim;
  std::vector<JobEvent> jobs;     // every job it holds: running (kStarted) or ended
  std::vector<GpuHealth> health;  // every GPU's health; empty = all ok
};

struct RegisterReply {
  uint64_t session = 0;   // names this registration; polls and reports carry it
  uint64_t next_seq = 0;  // poll for orders after this sequence number
  int64_t epoch = 0;      // the controller's, as in Order
  // The agent's fence: it stops its jobs (SIGTERM, then SIGKILL fence_grace_ms later) once it
  // has not reached a controller for fence_ms; 0: no fence (a controller too old to ask).
  int64_t fence_ms = 0;
  int64_t fence_grace_ms = 0;
};

struct ReportRequest {
  std::string node;
  uint64_t session = 0;
  std::vector<JobEvent> events;
  std::vector<LogChunk> logs;
  std::vector<GpuSample> gpus;
  std::vector<GpuHealth> health;  // every GPU's health when it changed; empty = unchanged
  std::vector<GpuNotice> notices;
  std::vector<JobId> attached;           // its sessions with a client attached now (every report)
  std::optional<ReclaimNotice> reclaim;  // the node's reclaim notice, once seen (every report)
};

}  // namespace baton
