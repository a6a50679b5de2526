// JSON <-> Job: the job object of the API and the store's record, lists of them, queue
// positions, job files made of shown jobs, and error bodies. Specs are job_spec_codec.cc's.
#include <charconv>
#include <cmath>

#include "codec/internal/job_spec.h"
#include "codec/internal/json_util.h"
#include "codec/json_codec.h"
#include "core/quantity.h"

namespace baton::codec {
namespace {

using namespace internal;

json::value OptTime(const std::optional<TimePoint>& t) {
  return t ? TimeValue(*t) : json::value(nullptr);
}

json::array AllocationArray(const std::vector<NodeAllocation>& allocation, JobForm form) {
  json::array alloc;
  for (const auto& part : allocation) {
    json::object p;
    p["node"] = part.node;
    json::array gpus;
    for (int g : part.gpus) gpus.emplace_back(g);
    p["gpus"] = std::move(gpus);
    if (form == JobForm::kRecord || part.milli_per_gpu != 1000) {
      p["gpu_share"] = static_cast<double>(part.milli_per_gpu) / 1000.0;
    }
    if (!part.gpu_sharing.empty()) p["gpu_sharing"] = part.gpu_sharing;
    if (form == JobForm::kRecord) {
      p["started"] = part.started;
      p["ended"] = part.ended;
      p["exit_code"] = part.exit_code;
      p["signal"] = part.signal;
      p["timed_out"] = part.timed_out;
      p["lost"] = part.lost;
      if (part.launch_failed) p["launch_failed"] = true;
    }
    alloc.emplace_back(std::move(p));
  }
  return alloc;
}

// The fields only the stored record has, after all the others.
void AddRecordOnlyFields(const Job& job, json::object* o) {
  (*o)["launched"] = job.launched;
  (*o)["stop_requested"] = job.stop_requested;
  (*o)["preempt_requested"] = job.preempt_requested;
  (*o)["failures"] = job.failures;
  (*o)["cost_micros"] = job.cost_micros;
  (*o)["cost_per_hour_micros"] = job.cost_per_hour_micros;
  if (job.utilization_samples > 0) {
    (*o)["utilization_sum"] = job.utilization_sum;
    (*o)["utilization_samples"] = job.utilization_samples;
  }
  if (job.launch_blamed > 0) (*o)["launch_blamed"] = job.launch_blamed;
  // A batch job's secret and step port: the record only, never an API view.
  if (!job.step_key.empty()) (*o)["step_key"] = job.step_key;
  if (job.step_port > 0) (*o)["step_port"] = job.step_port;
}

json::value MetricPointValue(const Boxed<MetricPoint>& p) {
  if (!p) return nullptr;
  json::object o;
  o["value"] = p->value;
  o["step"] = p->step >= 0 ? json::value(p->step) : json::value(nullptr);
  o["checkpoint"] = p->checkpoint.empty() ? json::value(nullptr) : json::value(p->checkpoint);
  o["at"] = TimeValue(p->at);
  return o;
}

// The tracked metric: "best_metric": "loss:min", and "metric": {name, goal, last, best}.
void AddMetricFields(const Job& job, json::object* o) {
  const JobSpec& s = job.spec;
  (*o)["best_metric"] = s.best_metric + (s.best_max ? ":max" : ":min");
  json::object m;
  m["name"] = s.best_metric;
  m["goal"] = s.best_max ? "max" : "min";
  m["last"] = MetricPointValue(job.metric_last);
  m["best"] = MetricPointValue(job.metric_best);
  (*o)["metric"] = std::move(m);
}

Result<Boxed<MetricPoint>> MetricPointFrom(const json::object& m, std::string_view key) {
  const json::value* v = Find(m, key);
  if (v == nullptr) return Boxed<MetricPoint>();
  ASSIGN_OR_RETURN(const json::object* o, GetObject(*v, key));
  MetricPoint p;
  const json::value* value = Find(*o, "value");
  if (value == nullptr) return Err(InvalidArgument(std::string(key) + ".value: missing"));
  ASSIGN_OR_RETURN(p.value, GetNumber(*value, "value"));
  if (const json::value* f = Find(*o, "step")) {
    ASSIGN_OR_RETURN(p.step, GetInt(*f, "step", 0, INT64_MAX));
  }
  if (const json::value* f = Find(*o, "checkpoint")) {
    ASSIGN_OR_RETURN(p.checkpoint, GetString(*f, "checkpoint", 4096));
  }
  if (const json::value* f = Find(*o, "at")) {
    ASSIGN_OR_RETURN(p.at, GetTime(*f, "at"));
  }
  return Boxed<MetricPoint>(std::move(p));
}

// When and how many times it runs: dependencies, begin, array, schedule.
void AddWhenFields(const Job& job, json::object* out) {
  const JobSpec& s = job.spec;
  json::object& o = *out;
  for (const auto& [key, ids] : {std::pair{"after", &s.after}, std::pair{"after_any", &s.after_any},
                                 std::pair{"after_notok", &s.after_notok}}) {
    json::array list;
    for (JobId id : *ids) list.emplace_back(id.value);
    if (!list.empty() || std::string_view(key) == "after") o[key] = std::move(list);
  }
  if (s.singleton) o["singleton"] = true;
  if (s.begin) o["begin"] = TimeValue(*s.begin);
  if (!s.array.empty()) o["array"] = s.array;
  if (job.array_id.value != 0) o["array_id"] = job.array_id.value;
  // A task's index; a dry run's tasks have it before they have ids.
  if (job.array_id.value != 0 || job.array_index >= 0) o["array_index"] = job.array_index;
  if (!s.schedule.empty()) o["schedule"] = s.schedule;
  if (job.cron_id.value != 0) o["cron_id"] = job.cron_id.value;
  if (job.cron_stopped) o["cron_stopped"] = true;  // its series ends with it
}

json::object JobObject(const Job& job, JobForm form) {
  const JobSpec& s = job.spec;
  json::object o;
  o["id"] = job.id.value;
  o["name"] = s.name;
  o["user"] = job.user;
  o["project"] = s.project;
  o["pool"] = s.pool;
  o["priority"] = PriorityName(s.priority);
  o["state"] = JobStateName(job.state);
  o["reason"] = job.reason == WaitReason::kNone ? json::value(nullptr)
                                                : json::value(WaitReasonName(job.reason));
  std::string detail = ReasonDetail(job);
  o["reason_detail"] = detail.empty() ? json::value(nullptr) : json::value(detail);
  json::array cmd;
  for (const auto& a : s.command) cmd.emplace_back(a);
  o["command"] = std::move(cmd);
  o["shell"] = s.shell;
  o["resources"] = EncodeResources(s.resources);
  o["time_limit_s"] = s.time_limit.count() == 0
                          ? json::value(nullptr)
                          : json::value(static_cast<double>(s.time_limit.count()) / 1000.0);
  o["grace_period_s"] = static_cast<double>(s.grace_period.count()) / 1000.0;
  o["signal"] = s.signal == 0
                    ? json::value(nullptr)
                    : json::value(FormatNoticeSignal(s.signal, s.signal_before, s.signal_shell));
  o["retries"] = s.retries;
  if (!s.requeue) o["requeue"] = false;
  if (s.output_limit > 0) o["output_limit"] = s.output_limit;
  if (s.batch) o["batch"] = true;
  if (s.slurm_env) o["slurm_env"] = true;
  if (s.alloc) o["alloc"] = true;
  if (!s.output_file.empty()) o["output_file"] = s.output_file;
  if (!s.error_file.empty()) o["error_file"] = s.error_file;
  if (s.tasks_per_node > 0) o["tasks_per_node"] = s.tasks_per_node;
  o["restarts"] = job.restarts;
  o["preemptions"] = job.preemptions;
  if (s.max_preemptions) o["max_preemptions"] = *s.max_preemptions;
  // A preemption under way: when the running attempt's SIGKILL is due.
  if (job.preempt_deadline) o["preempt_deadline"] = TimeValue(*job.preempt_deadline);
  o["last_requeue"] =
      job.last_requeue.empty() ? json::value(nullptr) : json::value(job.last_requeue);
  // When the running attempt last wrote a checkpoint line (the agent's time); absent before.
  if (job.last_checkpoint) o["last_checkpoint"] = TimeValue(*job.last_checkpoint);
  json::object env;
  for (const auto& [k, v] : s.env) env[k] = v;
  o["env"] = std::move(env);
  o["workdir"] = s.workdir.empty() ? json::value(nullptr) : json::value(s.workdir);
  if (!s.venv.empty()) o["venv"] = s.venv;
  if (!s.conda.empty()) o["conda"] = s.conda;
  if (s.interactive != Interactive::kNone) o["interactive"] = InteractiveName(s.interactive);
  if (!s.code.empty()) o["code"] = s.code;
  if (!s.image.empty()) o["image"] = s.image;
  AddWhenFields(job, &o);
  if (s.model) o["model"] = EncodeModelSizing(*s.model);
  if (!job.sized.empty()) o["sized"] = job.sized;
  if (!s.best_metric.empty()) AddMetricFields(job, &o);
  // What the job is; a record keeps what was chosen (Preemptible() fills in the rest).
  if (form != JobForm::kRecord) {
    o["preemptible"] = Preemptible(s);
  } else if (s.preemptible) {
    o["preemptible"] = *s.preemptible;
  }
  o["process_per_gpu"] = s.process_per_gpu;
  o["hold"] = s.hold;
  o["submitted_at"] = TimeValue(job.submitted_at);
  o["started_at"] = OptTime(job.started_at);
  o["finished_at"] = OptTime(job.finished_at);
  if (form != JobForm::kRecord && job.state == JobState::kPending) {
    o["estimated_start"] = OptTime(job.estimated_start);
  }
  o["exit_code"] = job.exit_code ? json::value(*job.exit_code) : json::value(nullptr);
  o["exit_signal"] = job.exit_signal ? json::value(*job.exit_signal) : json::value(nullptr);
  o["allocation"] = AllocationArray(job.allocation, form);
  o["cost"] = static_cast<double>(job.cost_micros) / 1e6;
  o["cost_per_hour"] = static_cast<double>(job.cost_per_hour_micros) / 1e6;
  o["gpu_seconds"] = std::round(job.gpu_seconds * 1000) / 1000;
  // Where a running multi-node or multi-process job's processes meet (its MASTER_PORT unless its
  // env sets one); the record keeps it, so that a launch sent again names the same port.
  if (job.master_port > 0 && (form == JobForm::kRecord || job.state == JobState::kRunning)) {
    o["master_port"] = job.master_port;
  }
  if (!job.launch_failed_on.empty()) {
    json::array nodes;
    for (const std::string& n : job.launch_failed_on) nodes.emplace_back(n);
    o["launch_failed_on"] = std::move(nodes);
  }
  if (form == JobForm::kRecord) AddRecordOnlyFields(job, &o);
  return o;
}

Result<std::optional<TimePoint>> OptionalTime(const json::object& o, std::string_view key) {
  const json::value* v = Find(o, key);
  if (v == nullptr) return std::optional<TimePoint>();
  ASSIGN_OR_RETURN(TimePoint t, GetTime(*v, key));
  return std::optional<TimePoint>(t);
}

// The spec fields of a job object, through the same decoder users' specs go through.
Result<JobSpec> SpecFromJobObject(const json::object& o) {
  json::object spec_obj;
  for (std::string_view key :
       {"name",           "command",         "priority",     "project",
        "pool",           "retries",         "env",          "workdir",
        "after",          "after_any",       "after_notok",  "singleton",
        "begin",          "array",           "schedule",     "preemptible",
        "hold",           "process_per_gpu", "time_limit_s", "grace_period_s",
        "signal",         "model",           "venv",         "conda",
        "best_metric",    "interactive",     "code",         "image",
        "output_limit",   "batch",           "slurm_env",    "output_file",
        "error_file",     "tasks_per_node",  "alloc",        "requeue",
        "max_preemptions"}) {
    if (const json::value* f = Find(o, key)) spec_obj[key] = *f;
  }
  if (const json::value* res = Find(o, "resources")) spec_obj["resources"] = *res;
  if (const json::value* cmd = Find(o, "command"); cmd != nullptr && cmd->is_array()) {
    const json::value* shell = Find(o, "shell");
    if (shell != nullptr && shell->is_bool() && shell->get_bool() && cmd->get_array().size() == 1) {
      spec_obj["command"] = cmd->get_array()[0];
    }
  }
  json::value spec_value(std::move(spec_obj));
  JobSpec spec;
  RETURN_IF_ERROR(DecodeSpecObject(spec_value, "", &spec));
  return spec;
}

// Who submitted the job, where it stands and when it started and ended.
Result<void> ReadJobStatus(const json::object& o, Job* job) {
  if (const json::value* f = Find(o, "user")) {
    ASSIGN_OR_RETURN(job->user, GetString(*f, "user", 256));
  }
  if (const json::value* f = Find(o, "state")) {
    ASSIGN_OR_RETURN(std::string s, GetString(*f, "state", 32));
    ASSIGN_OR_RETURN(job->state, ParseJobState(s));
  }
  if (const json::value* f = Find(o, "reason")) {
    ASSIGN_OR_RETURN(std::string reason, GetString(*f, "reason", 64));
    ASSIGN_OR_RETURN(job->reason, ParseWaitReason(reason));
  }
  if (const json::value* f = Find(o, "reason_detail")) {
    ASSIGN_OR_RETURN(job->reason_detail, GetString(*f, "reason_detail", 4096));
  }
  if (const json::value* f = Find(o, "restarts")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*f, "restarts", 0, 1'000'000));
    job->restarts = static_cast<int>(n);
  }
  if (const json::value* f = Find(o, "submitted_at")) {
    ASSIGN_OR_RETURN(job->submitted_at, GetTime(*f, "submitted_at"));
  }
  ASSIGN_OR_RETURN(job->started_at, OptionalTime(o, "started_at"));
  ASSIGN_OR_RETURN(job->estimated_start, OptionalTime(o, "estimated_start"));
  ASSIGN_OR_RETURN(job->finished_at, OptionalTime(o, "finished_at"));
  if (const json::value* f = Find(o, "exit_code")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*f, "exit_code", -1, 255));
    job->exit_code = static_cast<int>(n);
  }
  if (const json::value* f = Find(o, "exit_signal")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*f, "exit_signal", 0, 128));
    job->exit_signal = static_cast<int>(n);
  }
  return {};
}

// One element of allocation: a node, its GPUs and how its part ran.
Result<NodeAllocation> AllocationPartFromValue(const json::value& pv) {
  ASSIGN_OR_RETURN(const json::object* p, GetObject(pv, "allocation[]"));
  NodeAllocation part;
  if (const json::value* n = Find(*p, "node")) {
    ASSIGN_OR_RETURN(part.node, GetString(*n, "node", 64));
  }
  if (const json::value* g = Find(*p, "gpus")) {
    ASSIGN_OR_RETURN(const json::array* gpus, GetArray(*g, "gpus"));
    for (const auto& gv : *gpus) {
      ASSIGN_OR_RETURN(int64_t idx, GetInt(gv, "gpus[]", 0, 4096));
      part.gpus.push_back(static_cast<int>(idx));
    }
  }
  if (const json::value* s = Find(*p, "gpu_share")) {
    ASSIGN_OR_RETURN(double share, GetNumber(*s, "gpu_share"));
    ASSIGN_OR_RETURN(part.milli_per_gpu, MilliFromNumber(share, "gpu_share", 1000));
  }
  if (const json::value* s = Find(*p, "gpu_sharing")) {
    ASSIGN_OR_RETURN(part.gpu_sharing, GetString(*s, "gpu_sharing", 16));
    if (part.gpu_sharing != "mps" && part.gpu_sharing != "none")
      return Err(InvalidArgument("gpu_sharing: must be mps or none"));
  }
  for (auto [key, flag] : {std::pair{"started", &part.started}, std::pair{"ended", &part.ended},
                           std::pair{"timed_out", &part.timed_out}, std::pair{"lost", &part.lost},
                           std::pair{"launch_failed", &part.launch_failed}}) {
    if (const json::value* b = Find(*p, key)) {
      ASSIGN_OR_RETURN(*flag, GetBool(*b, key));
    }
  }
  if (const json::value* e = Find(*p, "exit_code")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*e, "exit_code", -1, 255));
    part.exit_code = static_cast<int>(n);
  }
  if (const json::value* e = Find(*p, "signal")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*e, "signal", 0, 128));
    part.signal = static_cast<int>(n);
  }
  return part;
}

// The controller's bookkeeping: launch and stop flags, failures, cost, utilisation, the
// master port and GPU-seconds.
// What it belongs to and how it was made: its recurring series, its sizing, its tracked metric.
Result<void> ReadSeriesAndSizing(const json::object& o, Job* job) {
  if (const json::value* f = Find(o, "cron_id")) {
    ASSIGN_OR_RETURN(job->cron_id.value, GetInt(*f, "cron_id", 1, INT64_MAX));
  }
  if (const json::value* f = Find(o, "metric")) {
    ASSIGN_OR_RETURN(const json::object* m, GetObject(*f, "metric"));
    ASSIGN_OR_RETURN(job->metric_last, MetricPointFrom(*m, "last"));
    ASSIGN_OR_RETURN(job->metric_best, MetricPointFrom(*m, "best"));
  }
  if (const json::value* f = Find(o, "sized")) {
    ASSIGN_OR_RETURN(job->sized, GetString(*f, "sized", 1024));
  }
  if (const json::value* f = Find(o, "cron_stopped")) {
    ASSIGN_OR_RETURN(job->cron_stopped, GetBool(*f, "cron_stopped"));
  }
  return {};
}

Result<void> ReadJobBookkeeping(const json::object& o, Job* job) {
  if (const json::value* f = Find(o, "launched")) {
    ASSIGN_OR_RETURN(job->launched, GetBool(*f, "launched"));
  }
  if (const json::value* f = Find(o, "stop_requested")) {
    ASSIGN_OR_RETURN(job->stop_requested, GetBool(*f, "stop_requested"));
  }
  if (const json::value* f = Find(o, "last_requeue"); f != nullptr && !f->is_null()) {
    ASSIGN_OR_RETURN(job->last_requeue, GetString(*f, "last_requeue", 256));
  }
  if (const json::value* f = Find(o, "preempt_requested")) {
    ASSIGN_OR_RETURN(job->preempt_requested, GetBool(*f, "preempt_requested"));
  }
  ASSIGN_OR_RETURN(job->last_checkpoint, OptionalTime(o, "last_checkpoint"));
  if (const json::value* f = Find(o, "failures")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*f, "failures", 0, SpecLimits::kMaxRetries));
    job->failures = static_cast<int>(n);
  }
  if (const json::value* f = Find(o, "preemptions")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*f, "preemptions", 0, INT32_MAX));
    job->preemptions = static_cast<int>(n);
  }
  ASSIGN_OR_RETURN(job->preempt_deadline, OptionalTime(o, "preempt_deadline"));
  if (const json::value* f = Find(o, "cost_micros")) {
    ASSIGN_OR_RETURN(job->cost_micros, GetInt(*f, "cost_micros", 0, INT64_MAX));
  } else if (const json::value* c = Find(o, "cost")) {
    ASSIGN_OR_RETURN(double cost, GetNumber(*c, "cost"));
    job->cost_micros = static_cast<int64_t>(std::llround(cost * 1e6));
  }
  if (const json::value* f = Find(o, "utilization_samples")) {
    ASSIGN_OR_RETURN(job->utilization_samples, GetInt(*f, "utilization_samples", 0, INT64_MAX));
    if (const json::value* sum = Find(o, "utilization_sum")) {
      ASSIGN_OR_RETURN(job->utilization_sum, GetNumber(*sum, "utilization_sum"));
    }
  }
  if (const json::value* f = Find(o, "cost_per_hour_micros")) {
    ASSIGN_OR_RETURN(job->cost_per_hour_micros, GetInt(*f, "cost_per_hour_micros", 0, INT64_MAX));
  } else if (const json::value* c = Find(o, "cost_per_hour")) {
    ASSIGN_OR_RETURN(double per_hour, GetNumber(*c, "cost_per_hour"));
    job->cost_per_hour_micros = static_cast<int64_t>(std::llround(per_hour * 1e6));
  }
  if (const json::value* f = Find(o, "master_port")) {
    ASSIGN_OR_RETURN(int64_t port, GetInt(*f, "master_port", 1, 65535));
    job->master_port = static_cast<int>(port);
  }
  if (const json::value* f = Find(o, "step_port")) {
    ASSIGN_OR_RETURN(int64_t port, GetInt(*f, "step_port", 1, 65535));
    job->step_port = static_cast<int>(port);
  }
  if (const json::value* f = Find(o, "step_key")) {
    ASSIGN_OR_RETURN(job->step_key, GetString(*f, "step_key", 128));
  }
  const json::value* index = Find(o, "array_index");
  if (const json::value* f = Find(o, "array_id")) {
    ASSIGN_OR_RETURN(job->array_id.value, GetInt(*f, "array_id", 1, INT64_MAX));
    if (index == nullptr) return Err(InvalidArgument("array_index: missing beside array_id"));
  }
  if (index != nullptr) {  // a dry run's task has it alone
    ASSIGN_OR_RETURN(int64_t i, GetInt(*index, "array_index", 0, SpecLimits::kMaxArrayIndex));
    job->array_index = static_cast<int>(i);
  }
  if (const json::value* f = Find(o, "launch_failed_on")) {
    ASSIGN_OR_RETURN(const json::array* nodes, GetArray(*f, "launch_failed_on"));
    if (nodes->size() > 64) return Err(InvalidArgument("launch_failed_on: more than 64 nodes"));
    for (const auto& n : *nodes) {
      ASSIGN_OR_RETURN(std::string name, GetString(n, "launch_failed_on[]", 64));
      job->launch_failed_on.push_back(std::move(name));
    }
  }
  if (Result<void> r = ReadSeriesAndSizing(o, job); !r) return r;
  if (const json::value* f = Find(o, "launch_blamed")) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(*f, "launch_blamed", 0, 64));
    job->launch_blamed = static_cast<int>(n);
  }
  if (const json::value* f = Find(o, "gpu_seconds")) {
    ASSIGN_OR_RETURN(job->gpu_seconds, GetNumber(*f, "gpu_seconds"));
    if (!(job->gpu_seconds >= 0 && job->gpu_seconds < 1e15)) {
      return Err(InvalidArgument("gpu_seconds: must be between 0 and 1e15"));
    }
  }
  return {};
}

// A job object; `drafted`: one a dry run answers, which may have no id.
Result<Job> JobFromValue(const json::value& v, bool drafted = false) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "job"));
  Job job;
  const json::value* id = Find(*o, "id");
  if (id == nullptr && !drafted) return Err(InvalidArgument("job: missing id"));
  if (id != nullptr) {
    ASSIGN_OR_RETURN(job.id.value, GetInt(*id, "id", 1, INT64_MAX));
  }
  ASSIGN_OR_RETURN(job.spec, SpecFromJobObject(*o));
  if (Result<void> r = ReadJobStatus(*o, &job); !r) return Err(r.error());
  if (const json::value* f = Find(*o, "allocation")) {
    ASSIGN_OR_RETURN(const json::array* parts, GetArray(*f, "allocation"));
    for (const auto& pv : *parts) {
      ASSIGN_OR_RETURN(NodeAllocation part, AllocationPartFromValue(pv));
      job.allocation.push_back(std::move(part));
    }
  }
  if (Result<void> r = ReadJobBookkeeping(*o, &job); !r) return Err(r.error());
  return job;
}

}  // namespace

namespace {

// A job object as the API shows it, told from a spec by its id.
bool IsJobObject(const json::value& v) { return v.is_object() && v.get_object().contains("id"); }

Result<JobSpec> SpecOfShownJob(const json::value& v, const std::string& where) {
  auto spec = SpecFromJobObject(v.get_object());
  if (!spec) return Err(InvalidArgument(where + spec.error().message()));
  spec->hold = false;
  // A task of an array is that one job again, not its whole array.
  if (v.get_object().contains("array_id")) spec->array.clear();
  // A run of a recurring job likewise: that run again, now, not a second series.
  if (v.get_object().contains("cron_id")) {
    spec->schedule.clear();
    spec->begin.reset();
  }
  return spec;
}

}  // namespace

Result<std::vector<JobSpec>> DecodeJobFile(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  if (IsJobObject(v)) {
    ASSIGN_OR_RETURN(JobSpec spec, SpecOfShownJob(v, ""));
    return std::vector<JobSpec>{std::move(spec)};
  }
  // `baton jobs --json`: {"jobs": [job, ...], "next": ...}, or a bare array of jobs.
  const json::value* list = &v;
  if (v.is_object() && v.get_object().contains("jobs")) list = &v.get_object().at("jobs");
  if (list->is_array() && !list->get_array().empty() && IsJobObject(list->get_array()[0])) {
    std::vector<JobSpec> specs;
    const json::array& a = list->get_array();
    if (a.size() > 10000) return Err(TooLarge("jobs: at most 10000 jobs in one batch"));
    for (size_t i = 0; i < a.size(); ++i) {
      std::string where = "jobs[" + std::to_string(i) + "]: ";
      if (!IsJobObject(a[i])) return Err(InvalidArgument(where + "not a job object"));
      ASSIGN_OR_RETURN(JobSpec spec, SpecOfShownJob(a[i], where));
      specs.push_back(std::move(spec));
    }
    return specs;
  }
  return DecodeJobSpecs(text);
}

std::string EncodeJob(const Job& job, JobForm form) {
  return json::serialize(JobObject(job, form));
}

std::string EncodeJobList(const std::vector<const Job*>& jobs, std::optional<int64_t> next) {
  json::array a;
  a.reserve(jobs.size());
  for (const Job* j : jobs) a.emplace_back(JobObject(*j, JobForm::kPublic));
  json::object o;
  o["jobs"] = std::move(a);
  o["next"] = next ? json::value(*next) : json::value(nullptr);
  return json::serialize(o);
}

std::string EncodeDryRun(const std::vector<const Job*>& jobs) {
  json::array a;
  a.reserve(jobs.size());
  for (const Job* j : jobs) {
    json::object job = JobObject(*j, JobForm::kPublic);
    if (j->id.value == 0) job.erase("id");
    a.emplace_back(std::move(job));
  }
  json::object o;
  o["dry_run"] = true;
  o["jobs"] = std::move(a);
  return json::serialize(o);
}

json::object FactorsObject(const QueueFactors& f) {
  json::object fo;
  fo["priority"] = f.priority;
  fo["fairshare"] = f.fairshare;
  fo["age"] = f.age;
  fo["size"] = f.size;
  fo["las"] = f.las;
  fo["score"] = f.score;
  return fo;
}

std::string EncodeJobDetail(const Job& job, const QueueFactors* factors,
                            std::optional<int64_t> position) {
  json::object o = JobObject(job, JobForm::kPublic);
  if (factors != nullptr) o["factors"] = FactorsObject(*factors);
  if (position) o["queue_position"] = *position;
  return json::serialize(o);
}

std::optional<QueueInfo> DecodeQueueInfo(std::string_view job_json) {
  auto v = Parse(job_json);
  if (!v || !v->is_object()) return std::nullopt;
  const json::value* f = Find(v->get_object(), "factors");
  const json::value* p = Find(v->get_object(), "queue_position");
  if (f == nullptr || !f->is_object() || p == nullptr || !p->is_int64()) return std::nullopt;
  QueueInfo info;
  info.position = p->get_int64();
  for (auto [key, field] :
       {std::pair{"priority", &info.factors.priority},
        std::pair{"fairshare", &info.factors.fairshare}, std::pair{"age", &info.factors.age},
        std::pair{"size", &info.factors.size}, std::pair{"score", &info.factors.score}}) {
    const json::value* x = Find(f->get_object(), key);
    if (x == nullptr || !x->is_number()) return std::nullopt;
    *field = x->to_number<double>();
  }
  // A server before the LAS factor sends none: 0, as it counted.
  if (const json::value* x = Find(f->get_object(), "las"); x != nullptr && x->is_number())
    info.factors.las = x->to_number<double>();
  return info;
}

std::string EncodeQueue(const std::vector<Job>& jobs, const std::vector<QueueFactors>& factors,
                        std::optional<int64_t> next) {
  json::array a;
  a.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    json::object o = JobObject(jobs[i], JobForm::kPublic);
    if (i < factors.size()) o["factors"] = FactorsObject(factors[i]);
    a.emplace_back(std::move(o));
  }
  json::object root;
  root["jobs"] = std::move(a);
  root["next"] = next ? json::value(*next) : json::value(nullptr);
  return json::serialize(root);
}

Result<Job> DecodeJob(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  return JobFromValue(v);
}

Result<Submitted> DecodeSubmitted(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "job"));
  Submitted out;
  const json::value* id = Find(*o, "id");
  if (id == nullptr) return Err(InvalidArgument("job: missing id"));
  ASSIGN_OR_RETURN(out.id.value, GetInt(*id, "id", 1, INT64_MAX));
  if (const json::value* f = Find(*o, "schedule")) {
    ASSIGN_OR_RETURN(out.schedule, GetString(*f, "schedule", SpecLimits::kScheduleBytes));
  }
  // null: none, as the spec decoder reads it.
  if (const json::value* f = Find(*o, "begin"); f != nullptr && !f->is_null()) {
    ASSIGN_OR_RETURN(out.begin, GetTime(*f, "begin"));
  }
  return out;
}

Result<std::vector<Job>> DecodeJobList(std::string_view text, std::optional<int64_t>* next) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  const json::value* jobs = Find(*o, "jobs");
  if (jobs == nullptr) return Err(InvalidArgument("jobs: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*jobs, "jobs"));
  std::vector<Job> out;
  for (const auto& jv : *a) {
    ASSIGN_OR_RETURN(Job j, JobFromValue(jv));
    out.push_back(std::move(j));
  }
  if (next != nullptr) {
    next->reset();
    if (const json::value* n = Find(*o, "next")) {
      ASSIGN_OR_RETURN(int64_t nv, GetInt(*n, "next", 0, INT64_MAX));
      *next = nv;
    }
  }
  return out;
}

Result<std::vector<Job>> DecodeDryRun(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  const json::value* dry = Find(*o, "dry_run");
  if (dry == nullptr || !dry->is_bool() || !dry->get_bool()) {
    return Err(InvalidArgument("dry_run: missing (not a dry run's answer)"));
  }
  const json::value* jobs = Find(*o, "jobs");
  if (jobs == nullptr) return Err(InvalidArgument("jobs: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*jobs, "jobs"));
  std::vector<Job> out;
  for (const auto& jv : *a) {
    ASSIGN_OR_RETURN(Job j, JobFromValue(jv, /*drafted=*/true));
    out.push_back(std::move(j));
  }
  return out;
}

namespace {

json::object CronObject(const CronEntry& e) {
  json::object o;
  o["id"] = e.id.value;
  o["user"] = e.current.user;
  o["name"] = e.current.spec.name;
  o["schedule"] = e.current.spec.schedule;
  o["runs"] = e.runs;
  const bool waiting = e.current.state == JobState::kPending || e.current.state == JobState::kHeld;
  o["next_run"] =
      waiting && e.current.spec.begin ? TimeValue(*e.current.spec.begin) : json::value(nullptr);
  o["job"] = JobObject(e.current, JobForm::kPublic);
  o["last"] = e.last ? json::value(JobObject(*e.last, JobForm::kPublic)) : json::value(nullptr);
  return o;
}

Result<CronEntry> CronFromValue(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "cron"));
  CronEntry e;
  const json::value* id = Find(*o, "id");
  const json::value* job = Find(*o, "job");
  if (id == nullptr || job == nullptr) return Err(InvalidArgument("cron: needs id and job"));
  ASSIGN_OR_RETURN(e.id.value, GetInt(*id, "id", 1, INT64_MAX));
  if (const json::value* runs = Find(*o, "runs")) {
    ASSIGN_OR_RETURN(e.runs, GetInt(*runs, "runs", 0, INT64_MAX));
  }
  ASSIGN_OR_RETURN(e.current, JobFromValue(*job));
  if (const json::value* last = Find(*o, "last")) {
    ASSIGN_OR_RETURN(Job j, JobFromValue(*last));
    e.last = std::move(j);
  }
  return e;
}

}  // namespace

std::string EncodeCron(const CronEntry& entry) { return json::serialize(CronObject(entry)); }

std::string EncodeCronList(const std::vector<CronEntry>& entries) {
  json::array a;
  for (const CronEntry& e : entries) a.emplace_back(CronObject(e));
  json::object o;
  o["crons"] = std::move(a);
  return json::serialize(o);
}

Result<std::vector<CronEntry>> DecodeCronList(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  const json::value* crons = Find(*o, "crons");
  if (crons == nullptr) return Err(InvalidArgument("crons: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*crons, "crons"));
  std::vector<CronEntry> out;
  for (const auto& cv : *a) {
    ASSIGN_OR_RETURN(CronEntry e, CronFromValue(cv));
    out.push_back(std::move(e));
  }
  return out;
}

std::string EncodeError(const Status& status, std::string_view field) {
  json::object inner;
  inner["code"] = CodeName(status.code());
  inner["message"] = status.message();
  if (!field.empty()) inner["field"] = field;
  json::object o;
  o["error"] = std::move(inner);
  return json::serialize(o);
}

std::string ErrorMessage(std::string_view body) {
  auto v = Parse(body);
  if (v && v->is_object()) {
    const json::value* e = Find(v->get_object(), "error");
    if (e != nullptr && e->is_object()) {
      const json::value* m = Find(e->get_object(), "message");
      if (m != nullptr && m->is_string()) return std::string(m->get_string());
    }
  }
  return std::string(body.substr(0, 512));
}

Result<std::string> DecodeWhoAmI(std::string_view body) {
  ASSIGN_OR_RETURN(json::value v, Parse(body));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "whoami"));
  const json::value* user = Find(*o, "user");
  if (user == nullptr) return Err(InvalidArgument("whoami: missing user"));
  return GetString(*user, "user", 256);
}

Result<std::string> DecodeCodeId(std::string_view body) {
  ASSIGN_OR_RETURN(json::value v, Parse(body));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "code"));
  const json::value* code = Find(*o, "code");
  if (code == nullptr) return Err(InvalidArgument("code: missing"));
  ASSIGN_OR_RETURN(std::string id, GetString(*code, "code", 64));
  if (!IsCodeId(id)) return Err(InvalidArgument("code: not a snapshot id"));
  return id;
}

std::string EncodeString(std::string_view s) { return json::serialize(json::value(s)); }

std::string EncodePreemption(const Job& job) {
  json::object o;
  o["job"] = job.id.value;
  o["state"] = JobStateName(job.state);
  o["preempting"] = job.preempt_deadline.has_value();
  o["deadline"] = OptTime(job.preempt_deadline);
  o["reason"] = job.preempt_deadline && !job.reason_detail.empty() ? json::value(job.reason_detail)
                                                                   : json::value(nullptr);
  return json::serialize(o);
}

}  // namespace baton::codec
