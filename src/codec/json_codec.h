// JSON encodings of Baton's values: job specs as users write them (with messages naming the
// bad field), jobs and nodes as the API shows them, the durable job record the store keeps,
// and the agent protocol. Boost.JSON stays inside codec/*.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/event.h"
#include "core/job.h"
#include "core/policy.h"
#include "core/protocol.h"
#include "core/role.h"
#include "core/status.h"
#include "core/usage.h"

namespace baton::codec {

// Bounds on any JSON document Baton parses.
inline constexpr int kMaxJsonDepth = 64;

// A job spec object. Unknown fields, wrong types and out-of-range values are errors naming
// the field; the result has passed ValidateJobSpec.
Result<JobSpec> DecodeJobSpec(std::string_view json);
// {"jobs": [spec, ...]} (batch submit), a bare array, or one spec object. Errors name the
// index: "jobs[3].resources.gpus: ...".
Result<std::vector<JobSpec>> DecodeJobSpecs(std::string_view json);
// A job file (`baton submit -f`): what DecodeJobSpecs takes, or jobs as `baton show ID --json`
// and `baton jobs --json` print them: of those, the spec's fields are read and the others (id,
// state, user, allocation, cost, ...) ignored; `hold` is not carried over.
Result<std::vector<JobSpec>> DecodeJobFile(std::string_view json);
// The body of POST /v1/jobs/batch: {"jobs": [spec, ...]} only; anything else is an error
// saying so.
Result<std::vector<JobSpec>> DecodeJobBatch(std::string_view json);

// The spec as a user would write it (the body of POST /v1/jobs).
std::string EncodeJobSpec(const JobSpec& spec);
// Converts a YAML document's text to JSON text (for `baton submit -f job.yaml`): plain
// scalars become numbers, booleans or null where they read as such, quoted ones stay strings.
Result<std::string> YamlToJson(std::string_view yaml, std::string_view file);

enum class JobForm {
  kPublic,  // the API's job object (PRODUCT.md §3)
  kRecord,  // the public object plus the controller's bookkeeping; what the store keeps
};
std::string EncodeJob(const Job& job, JobForm form = JobForm::kPublic);
// {"jobs": [...], "next": N|null}
std::string EncodeJobList(const std::vector<const Job*>& jobs, std::optional<int64_t> next);
// A submit's dry run: {"dry_run": true, "jobs": [...]}, the jobs it would make as the job
// object shows them, without "id" (jobs a repeated Idempotency-Key found keep theirs).
std::string EncodeDryRun(const std::vector<const Job*>& jobs);
// Reads it back (`baton submit --test-only`): the jobs, with id 0 where they have none.
Result<std::vector<Job>> DecodeDryRun(std::string_view json);
// Reads either form back (public form: bookkeeping fields take their defaults).
Result<Job> DecodeJob(std::string_view json);
Result<std::vector<Job>> DecodeJobList(std::string_view json, std::optional<int64_t>* next);
// What `baton submit` prints of the job a submit made: its id and, for a recurring job, its
// schedule and first run. Only these fields are read and checked (DecodeJob reads them all:
// ten times the work, for a command that may run in a loop of thousands).
struct Submitted {
  JobId id;
  std::string schedule;  // empty: not recurring
  std::optional<TimePoint> begin;
};
Result<Submitted> DecodeSubmitted(std::string_view json);

// Recurring jobs as GET /v1/crons shows them: {"crons": [cron, ...]}; a cron object is its id,
// user, name, schedule, runs, next_run (while its run waits), job (that run) and last (the
// latest run that ended, or null).
std::string EncodeCron(const CronEntry& entry);
std::string EncodeCronList(const std::vector<CronEntry>& entries);
Result<std::vector<CronEntry>> DecodeCronList(std::string_view json);

// The sizing catalog as GET /v1/models shows it: {"models": [{"name", "params", "layers",
// "hidden", "heads", "kv_heads", "head_dim", "vocab"}, ...]}.
std::string EncodeModelList(const std::vector<ModelShape>& models);
Result<std::vector<ModelShape>> DecodeModelList(std::string_view json);

// Nodes as the API shows them: {"nodes": [node, ...]}, and one node's object.
std::string EncodeNodeList(const std::vector<NodeStatus>& nodes);
std::string EncodeNode(const NodeStatus& node);

// A line a job appended to $BATON_METRICS_FILE: the path when it reports a checkpoint,
// {"checkpoint": "PATH", ...}; nullopt for other lines and for anything malformed.
std::optional<std::string> CheckpointFromMetricsLine(std::string_view line);
// A metrics line's checkpoint and the value of `metric` (a finite number) with its "step";
// what the line does not have stays empty.
struct MetricsLine {
  std::optional<std::string> checkpoint;
  std::optional<double> value;
  int64_t step = -1;
};
MetricsLine ReadMetricsLine(std::string_view line, std::string_view metric);

// The body of POST /v1/nodes/{name}/drain|undrain: {"gpus": [INDEX, ...], "reason": "..."}, all
// optional.
struct DrainBody {
  std::vector<int> gpus;
  std::string reason;
};
Result<DrainBody> DecodeDrainBody(std::string_view text);

// AWS's spot instance-action ({"action": "terminate", "time": "2026-11-29T12:02:00Z"}, the
// body of /latest/meta-data/spot/instance-action): the time the instance is taken back.
Result<TimePoint> DecodeInstanceAction(std::string_view text);

// GET /v1/jobs/{id}/preemption's answer: {"job", "state", "preempting", "deadline" (its
// SIGKILL's time, or null), "reason" (why it is preempted, or null)}.
std::string EncodePreemption(const Job& job);

// GET /v1/jobs/{id}: the job, and for a pending job its factors and place in the last full
// ordering ("factors", "queue_position") when it has them.
std::string EncodeJobDetail(const Job& job, const QueueFactors* factors,
                            std::optional<int64_t> position);
struct QueueInfo {
  QueueFactors factors;
  int64_t position = 0;
};
std::optional<QueueInfo> DecodeQueueInfo(std::string_view job_json);

// GET /v1/queue: {"jobs": [job + "position" + "factors"], "next": OFFSET|null}.
std::string EncodeQueue(const std::vector<Job>& jobs, const std::vector<QueueFactors>& factors,
                        std::optional<int64_t> next);
Result<std::vector<NodeStatus>> DecodeNodeList(std::string_view json);

// What autoscaling asks its provider, as the JSON on its stdin (docs/operations.md "Elastic
// capacity"), and the nodes its answer (its stdout) names: `{"nodes": [{"name", "id",
// "template"}]}`, required of resume and list; suspend's may be empty.
std::string EncodeProviderRequest(const ProviderRequest& request);
Result<std::vector<ProvidedNode>> DecodeProviderAnswer(std::string_view json, ProviderVerb verb);
// `baton gpus --json`: {"gpus": [one object per GPU of every node, with its readings and jobs]}.
std::string EncodeGpuList(const std::vector<NodeStatus>& nodes);

// {"error": {"code": "...", "message": "..."}}, with "field": `field` when it is not empty.
std::string EncodeError(const Status& status, std::string_view field = {});
// The message inside an error body, or the body itself when it is not one.
std::string ErrorMessage(std::string_view body);
// GET /v1/whoami: {"user": "...", "role": "..."}; the user.
Result<std::string> DecodeWhoAmI(std::string_view body);
// POST /v1/code's answer, {"code": ID, "bytes": N}: the snapshot's id.
Result<std::string> DecodeCodeId(std::string_view body);

// Agent protocol.
std::string EncodeRegister(const RegisterRequest& r);
Result<RegisterRequest> DecodeRegister(std::string_view json);
// POST /v1/agent/join: {"node": NAME}; its answer {"node": NAME, "credential": SECRET}.
std::string EncodeJoin(const std::string& node);
Result<std::string> DecodeJoin(std::string_view json);
std::string EncodeJoinReply(const std::string& node, const std::string& credential);
Result<std::string> DecodeJoinReply(std::string_view json);  // the credential
std::string EncodeRegisterReply(const RegisterReply& r);
Result<RegisterReply> DecodeRegisterReply(std::string_view json);
std::string EncodeOrders(const std::vector<Order>& orders);
Result<std::vector<Order>> DecodeOrders(std::string_view json);
std::string EncodeReport(const ReportRequest& r);
// Its answer: {"sample_interval_ms": N}, how often the agent is to send its GPUs' readings
// (0 from a controller that does not say: the agent keeps its own).
std::string EncodeReportReply(Duration sample_interval);
Result<Duration> DecodeReportReply(std::string_view json);

// GET /v1/usage: {"projects": [...], "users": [...]}.
std::string EncodeUsage(const std::vector<UsageRow>& projects, const std::vector<UsageRow>& users,
                        const std::optional<NodeCosts>& nodes, const std::string& currency);

struct Usage {
  std::string currency;
  std::vector<UsageRow> projects, users;
  std::optional<NodeCosts> nodes;
};
Result<Usage> DecodeUsage(std::string_view json);

// One event as an object: a webhook's body.
std::string EncodeEvent(const ClusterEvent& event);
Result<ClusterEvent> DecodeEvent(std::string_view json);
Result<std::vector<ClusterEvent>> DecodeEvents(std::string_view json);
// GET /v1/jobs/{id}/metrics.
std::string EncodeJobMetrics(const JobMetrics& metrics);
// GET /v1/jobs/{id}/metrics/lines: {"job", "node", "offset", "next", "size", "ended", "lines":
// [object, ...]}. `data` is the file of `node` from `offset`: its whole lines are parsed, a line
// that is not a JSON object is left out, and `next` is the offset after the last whole line
// (after all of `data` once the job has `ended`, the last line then having no newline).
std::string EncodeMetricsLines(JobId job, std::string_view node, std::string_view data,
                               int64_t offset, int64_t size, bool ended);
// GET /v1/events: {"events": [...]}.
std::string EncodeEvents(const std::vector<ClusterEvent>& events);
// POST /v1/nodes/{name}/inject: {"gpu": 3, "fault": "xid", "xid": 79, "duration": "30s"}.
struct InjectBody {
  FaultInjection fault;
};
Result<InjectBody> DecodeInjectBody(std::string_view text);
// POST /v1/tokens: {"user": "alice", "role": "user", "name": "laptop"}, each optional ("" user:
// the caller; role: user).
struct TokenBody {
  std::string user;
  Role role = Role::kUser;
  std::string name;
};
Result<TokenBody> DecodeTokenBody(std::string_view text);
// A token as the API shows it; `secret` only in the answer that created it.
struct TokenInfo {
  int64_t id = 0;
  std::string user;
  Role role = Role::kUser;
  std::string name;
  TimePoint created_at{};
  bool revoked = false;
  std::string secret;
};
std::string EncodeToken(const TokenInfo& t);
std::string EncodeTokenList(const std::vector<TokenInfo>& tokens);  // {"tokens": [...]}
Result<TokenInfo> DecodeToken(std::string_view json);
Result<std::vector<TokenInfo>> DecodeTokenList(std::string_view json);
Result<ReportRequest> DecodeReport(std::string_view json);

// `baton server --config FILE` and `baton up --config FILE` (YAML): where to serve, and the
// scheduling policy (docs/operations.md lists every key). Errors name the file, the line and
// the key; unknown keys are errors.
struct ServerConfig {
  std::string listen;  // HOST:PORT
  std::string data;    // data directory
  // shared_dir: where job logs and code snapshots are kept instead of the data directory (a
  // file system every controller mounts, with several controllers); "" = the data directory
  std::string shared_dir;
  Policy policy;
  std::vector<std::string> webhooks;  // alerts.webhooks: http(s):// URLs alerts are POSTed to
  int webhook_attempts = 5;           // alerts.attempts: per alert and URL
  std::string store_path;             // store.path: the SQLite database ("" = DATA/baton.db)
  std::string store_url;              // store.url: PostgreSQL's (type postgres), else ""
  std::string tls_cert, tls_key;      // tls.cert, tls.key: the server's (else its own CA's)
  bool insecure_http = false;         // tls.insecure_http: plain HTTP from other machines too
};
Result<ServerConfig> DecodeServerConfig(std::string_view yaml, std::string_view file);

// `baton sim --cluster FILE` (YAML): node groups, and the policy keys of the server's file
// (scheduling, defaults, projects, users, pools):
//   nodes: [{name: dgx, count: 4, gpus: 8xH100-80GB, pool: prod}, ...]
struct ClusterFile {
  struct Group {
    std::string name;
    int count = 1;
    std::string gpus;  // a --gpus SPEC, checked
    std::string pool = "default";
    bool mps = false;  // its nodes share GPUs through MPS: one user's fractions per GPU
    // Its nodes' MIG GPUs are re-planned for the queue (`baton agent --mig-reconfigure`),
    // each change taking `mig_delay` (the agent's NVML calls and its registration).
    bool mig_reconfigure = false;
    Duration mig_delay = std::chrono::seconds(5);
  };
  std::vector<Group> groups;
  Policy policy;  // with autoscaling: its templates (the simulator is the provider)
  Duration boot_delay = std::chrono::minutes(2);  // autoscaling.boot_delay
};
Result<ClusterFile> DecodeClusterFile(std::string_view yaml, std::string_view file);

// Small helpers for handlers and the CLI.
std::string EncodeString(std::string_view s);  // a JSON string literal, quoted and escaped

}  // namespace baton::codec
