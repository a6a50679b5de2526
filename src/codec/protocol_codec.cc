// JSON <-> the agent protocol (registration, reports; the orders are in order_codec.cc) and
// node views.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "codec/internal/json_util.h"
#include "codec/json_codec.h"
#include "core/mig.h"

namespace baton::codec {
namespace {

using namespace internal;

json::object NodeInfoObject(const NodeInfo& n) {
  json::object o;
  o["name"] = n.name;
  o["cpus"] = n.cpus;
  o["memory_bytes"] = n.memory_bytes;
  o["gpu_backend"] = GpuBackendName(n.gpu_backend);
  o["topology"] = GpuTopologyName(n.topology);
  o["pool"] = n.pool;
  o["address"] = n.address;
  o["refuses_root_jobs"] = n.refuses_root_jobs;
  o["spot"] = n.spot;
  o["mps"] = n.mps;
  json::array runtimes;
  for (const std::string& r : n.runtimes) runtimes.emplace_back(r);
  o["runtimes"] = std::move(runtimes);
  json::array gpus;
  for (const Gpu& g : n.gpus) {
    json::object go;
    go["index"] = g.index;
    go["uuid"] = g.uuid;
    go["model"] = g.model;
    go["memory_bytes"] = g.memory_bytes;
    go["numa_node"] = g.numa_node;
    go["island"] = g.island;
    go["pcie_switch"] = g.pcie_switch;
    go["physical"] = g.physical;
    go["mig_profile"] = g.mig_profile.empty() ? json::value(nullptr) : json::value(g.mig_profile);
    go["mig_start"] = g.mig_start;
    if (g.vacant) go["vacant"] = true;
    gpus.emplace_back(std::move(go));
  }
  o["gpus"] = std::move(gpus);
  if (!n.mig_gpus.empty()) {
    json::array parents;
    for (const MigParent& p : n.mig_gpus) {
      parents.emplace_back(json::object{
          {"physical", p.physical}, {"model", p.model}, {"memory_bytes", p.memory_bytes}});
    }
    o["mig_gpus"] = std::move(parents);
  }
  return o;
}

Result<NodeInfo> NodeInfoFrom(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "node"));
  NodeInfo n;
  RETURN_IF_ERROR(Read(*o, "name", &n.name, Str(64)));
  if (!IsValidNodeName(n.name))
    return Err(InvalidArgument("node.name: 1-64 of letters, digits, '.', '_', '-'"));
  RETURN_IF_ERROR(Read(*o, "cpus", &n.cpus, Int(0, 1'000'000)));
  RETURN_IF_ERROR(Read(*o, "memory_bytes", &n.memory_bytes, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "gpu_backend", &n.gpu_backend, Named<GpuBackendKind>(kGpuBackendNames)));
  RETURN_IF_ERROR(Read(*o, "topology", &n.topology, Named<GpuTopology>(kGpuTopologyNames)));
  RETURN_IF_ERROR(Read(*o, "pool", &n.pool, Str(64)));
  if (!IsValidNodeName(n.pool))
    return Err(InvalidArgument("node.pool: 1-64 of letters, digits, '.', '_', '-'"));
  RETURN_IF_ERROR(Read(*o, "address", &n.address, Str(255)));
  RETURN_IF_ERROR(Read(*o, "refuses_root_jobs", &n.refuses_root_jobs, Bool()));
  RETURN_IF_ERROR(Read(*o, "spot", &n.spot, Bool()));
  RETURN_IF_ERROR(Read(*o, "mps", &n.mps, Bool()));
  if (const json::value* rv = Find(*o, "runtimes")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*rv, "node.runtimes"));
    if (a->size() > 8) return Err(InvalidArgument("node.runtimes: more than 8"));
    for (const auto& r : *a) {
      ASSIGN_OR_RETURN(std::string name, GetString(r, "node.runtimes[]", 32));
      n.runtimes.push_back(std::move(name));
    }
  }
  if (const json::value* gv = Find(*o, "gpus")) {
    ASSIGN_OR_RETURN(const json::array* gpus, GetArray(*gv, "node.gpus"));
    if (gpus->size() > 1024) return Err(InvalidArgument("node.gpus: more than 1024"));
    for (const auto& g : *gpus) {
      ASSIGN_OR_RETURN(const json::object* go, GetObject(g, "node.gpus[]"));
      Gpu gpu;
      RETURN_IF_ERROR(Read(*go, "index", &gpu.index, Int(0, 1023)));
      RETURN_IF_ERROR(Read(*go, "uuid", &gpu.uuid, Str(128)));
      RETURN_IF_ERROR(Read(*go, "model", &gpu.model, Str(64)));
      RETURN_IF_ERROR(Read(*go, "memory_bytes", &gpu.memory_bytes, Int(0, INT64_MAX)));
      RETURN_IF_ERROR(Read(*go, "numa_node", &gpu.numa_node, Int(-1, 1024)));
      RETURN_IF_ERROR(Read(*go, "island", &gpu.island, Int(-1, 1'000'000)));
      RETURN_IF_ERROR(Read(*go, "pcie_switch", &gpu.pcie_switch, Int(-1, 1'000'000)));
      RETURN_IF_ERROR(Read(*go, "physical", &gpu.physical, Int(-1, 1023)));
      if (const json::value* m = Find(*go, "mig_profile"); m != nullptr && !m->is_null()) {
        ASSIGN_OR_RETURN(gpu.mig_profile, GetString(*m, "node.gpus[].mig_profile", 32));
      }
      RETURN_IF_ERROR(Read(*go, "mig_start", &gpu.mig_start, Int(-1, kMigMemorySlices - 1)));
      RETURN_IF_ERROR(Read(*go, "vacant", &gpu.vacant, Bool()));
      if (gpu.vacant && (gpu.physical < 0 || !gpu.mig_profile.empty()))
        return Err(InvalidArgument("node.gpus[]: a vacant place belongs to a MIG GPU (physical)"));
      if (gpu.index != static_cast<int>(n.gpus.size())) {
        return Err(InvalidArgument("node.gpus: indices must be 0, 1, 2, ... in order"));
      }
      n.gpus.push_back(std::move(gpu));
    }
  }
  if (const json::value* mv = Find(*o, "mig_gpus")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*mv, "node.mig_gpus"));
    if (a->size() > 128) return Err(InvalidArgument("node.mig_gpus: more than 128"));
    for (const auto& m : *a) {
      ASSIGN_OR_RETURN(const json::object* mo, GetObject(m, "node.mig_gpus[]"));
      MigParent p;
      RETURN_IF_ERROR(Read(*mo, "physical", &p.physical, Int(0, 1023)));
      RETURN_IF_ERROR(Read(*mo, "model", &p.model, Str(64)));
      RETURN_IF_ERROR(Read(*mo, "memory_bytes", &p.memory_bytes, Int(0, INT64_MAX)));
      for (const MigParent& q : n.mig_gpus) {
        if (q.physical == p.physical)
          return Err(
              InvalidArgument("node.mig_gpus: GPU " + std::to_string(p.physical) + " given twice"));
      }
      n.mig_gpus.push_back(std::move(p));
    }
  }
  return n;
}

json::object EventObject(const JobEvent& e) {
  json::object o;
  o["job"] = e.job.value;
  o["attempt"] = e.attempt;
  o["kind"] = e.kind == JobEvent::Kind::kStarted       ? "started"
              : e.kind == JobEvent::Kind::kExited      ? "exited"
              : e.kind == JobEvent::Kind::kCheckpoint  ? "checkpoint"
              : e.kind == JobEvent::Kind::kOutputLimit ? "output_limit"
                                                       : "metric";
  if (e.kind == JobEvent::Kind::kMetric) {
    o["value"] = e.value;
    o["step"] = e.step;
  }
  o["at"] = TimeValue(e.at);
  o["exit_code"] = e.exit_code;
  o["signal"] = e.signal;
  o["timed_out"] = e.timed_out;
  o["lost"] = e.lost;
  if (e.launch_failed) o["launch_failed"] = true;
  if (!e.message.empty()) o["message"] = e.message;
  if (!e.gpu_sharing.empty()) o["gpu_sharing"] = e.gpu_sharing;
  return o;
}

Result<JobEvent> EventFrom(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "event"));
  JobEvent e;
  RETURN_IF_ERROR(Read(*o, "job", &e.job.value, Int(1, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "attempt", &e.attempt, Int(0, 1'000'000)));
  std::string kind;
  RETURN_IF_ERROR(Read(*o, "kind", &kind, Str(16)));
  if (kind == "started")
    e.kind = JobEvent::Kind::kStarted;
  else if (kind == "exited")
    e.kind = JobEvent::Kind::kExited;
  else if (kind == "checkpoint")
    e.kind = JobEvent::Kind::kCheckpoint;
  else if (kind == "metric")
    e.kind = JobEvent::Kind::kMetric;
  else if (kind == "output_limit")
    e.kind = JobEvent::Kind::kOutputLimit;
  else
    return Err(
        InvalidArgument("event.kind: must be started, exited, checkpoint, metric or output_limit"));
  if (e.kind == JobEvent::Kind::kMetric) {
    const json::value* value = Find(*o, "value");
    if (value == nullptr) return Err(InvalidArgument("event.value: missing for a metric"));
    ASSIGN_OR_RETURN(e.value, GetNumber(*value, "event.value"));
    RETURN_IF_ERROR(Read(*o, "step", &e.step, Int(-1, INT64_MAX)));
  }
  if (const json::value* at = Find(*o, "at")) {
    ASSIGN_OR_RETURN(e.at, GetTime(*at, "event.at"));
  }
  RETURN_IF_ERROR(Read(*o, "exit_code", &e.exit_code, Int(-1, 255)));
  RETURN_IF_ERROR(Read(*o, "signal", &e.signal, Int(0, 128)));
  RETURN_IF_ERROR(Read(*o, "timed_out", &e.timed_out, Bool()));
  RETURN_IF_ERROR(Read(*o, "lost", &e.lost, Bool()));
  RETURN_IF_ERROR(Read(*o, "launch_failed", &e.launch_failed, Bool()));
  RETURN_IF_ERROR(Read(*o, "message", &e.message, Str(4096)));
  RETURN_IF_ERROR(Read(*o, "gpu_sharing", &e.gpu_sharing, Str(16)));
  if (!e.gpu_sharing.empty() && e.gpu_sharing != "mps" && e.gpu_sharing != "none")
    return Err(InvalidArgument("event.gpu_sharing: must be mps or none"));
  return e;
}

json::object SampleObject(const GpuSample& s) {
  json::object o;
  o["index"] = s.index;
  o["utilization_pct"] = s.utilization_pct;
  o["memory_used_bytes"] = s.memory_used_bytes;
  o["temperature_c"] = s.temperature_c;
  o["power_w"] = s.power_w;
  o["ecc_uncorrected"] = s.ecc_uncorrected;
  o["lost"] = s.lost;
  return o;
}

Result<GpuSample> SampleFrom(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "gpu sample"));
  GpuSample s;
  RETURN_IF_ERROR(Read(*o, "index", &s.index, Int(0, 1023)));
  RETURN_IF_ERROR(Read(*o, "utilization_pct", &s.utilization_pct, Int(0, 100)));
  RETURN_IF_ERROR(Read(*o, "memory_used_bytes", &s.memory_used_bytes, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "temperature_c", &s.temperature_c, Int(-100, 300)));
  RETURN_IF_ERROR(Read(*o, "power_w", &s.power_w, Int(0, 100000)));
  RETURN_IF_ERROR(Read(*o, "ecc_uncorrected", &s.ecc_uncorrected, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "lost", &s.lost, Bool()));
  return s;
}

json::object HealthObject(const GpuHealth& h) {
  json::object o;
  o["index"] = h.index;
  o["state"] = GpuHealthStateName(h.state);
  o["reason"] = h.reason;
  o["since"] = TimeValue(h.since);
  return o;
}

Result<GpuHealth> HealthFrom(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "health[]"));
  GpuHealth h;
  RETURN_IF_ERROR(Read(*o, "index", &h.index, Int(0, 1023)));
  std::string state;
  RETURN_IF_ERROR(Read(*o, "state", &state, Str(16)));
  auto parsed = ParseGpuHealthState(state);
  if (!parsed) return Err(InvalidArgument("health[]." + parsed.error().message()));
  h.state = *parsed;
  RETURN_IF_ERROR(Read(*o, "reason", &h.reason, Str(512)));
  if (const json::value* t = Find(*o, "since"); t != nullptr && !t->is_null()) {
    ASSIGN_OR_RETURN(h.since, GetTime(*t, "health[].since"));
  }
  return h;
}

json::array HealthArray(const std::vector<GpuHealth>& health) {
  json::array a;
  for (const GpuHealth& h : health) a.emplace_back(HealthObject(h));
  return a;
}

Result<std::vector<GpuHealth>> HealthListFrom(const json::object& o) {
  std::vector<GpuHealth> out;
  const json::value* v = Find(o, "health");
  if (v == nullptr) return out;
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*v, "health"));
  if (a->size() > 1024) return Err(InvalidArgument("health: more than 1024 GPUs"));
  for (const auto& item : *a) {
    ASSIGN_OR_RETURN(GpuHealth h, HealthFrom(item));
    out.push_back(std::move(h));
  }
  return out;
}

json::object ReclaimObject(const ReclaimNotice& n) {
  return json::object{
      {"source", n.source}, {"seen", TimeValue(n.seen)}, {"deadline", TimeValue(n.deadline)}};
}

Result<std::optional<ReclaimNotice>> ReclaimFrom(const json::object& o) {
  const json::value* v = Find(o, "reclaim");
  if (v == nullptr || v->is_null()) return std::optional<ReclaimNotice>();
  ASSIGN_OR_RETURN(const json::object* ro, GetObject(*v, "reclaim"));
  ReclaimNotice n;
  RETURN_IF_ERROR(Read(*ro, "source", &n.source, Str(16)));
  if (n.source != "aws" && n.source != "gcp" && n.source != "file")
    return Err(InvalidArgument("reclaim.source: must be aws, gcp or file"));
  const json::value* seen = Find(*ro, "seen");
  const json::value* deadline = Find(*ro, "deadline");
  if (seen == nullptr || deadline == nullptr)
    return Err(InvalidArgument("reclaim: needs seen and deadline"));
  ASSIGN_OR_RETURN(n.seen, GetTime(*seen, "reclaim.seen"));
  ASSIGN_OR_RETURN(n.deadline, GetTime(*deadline, "reclaim.deadline"));
  return std::optional<ReclaimNotice>(std::move(n));
}

}  // namespace

std::string EncodeRegister(const RegisterRequest& r) {
  json::object o;
  o["node"] = NodeInfoObject(r.node);
  json::array jobs;
  for (const auto& e : r.jobs) jobs.emplace_back(EventObject(e));
  o["jobs"] = std::move(jobs);
  o["health"] = HealthArray(r.health);
  if (r.reclaim) o["reclaim"] = ReclaimObject(*r.reclaim);
  return json::serialize(o);
}

Result<RegisterRequest> DecodeRegister(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  RegisterRequest r;
  const json::value* node = Find(*o, "node");
  if (node == nullptr) return Err(InvalidArgument("node: missing"));
  ASSIGN_OR_RETURN(r.node, NodeInfoFrom(*node));
  if (const json::value* jobs = Find(*o, "jobs")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*jobs, "jobs"));
    for (const auto& e : *a) {
      ASSIGN_OR_RETURN(JobEvent ev, EventFrom(e));
      r.jobs.push_back(std::move(ev));
    }
  }
  ASSIGN_OR_RETURN(r.health, HealthListFrom(*o));
  ASSIGN_OR_RETURN(r.reclaim, ReclaimFrom(*o));
  return r;
}

Result<TimePoint> DecodeInstanceAction(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  std::string action;
  RETURN_IF_ERROR(Read(*o, "action", &action, Str(32)));
  if (action != "terminate" && action != "stop" && action != "hibernate")
    return Err(InvalidArgument("action: must be terminate, stop or hibernate"));
  const json::value* time = Find(*o, "time");
  if (time == nullptr) return Err(InvalidArgument("time: missing"));
  return GetTime(*time, "time");
}

std::string EncodeJoin(const std::string& node) {
  return json::serialize(json::object{{"node", node}});
}

Result<std::string> DecodeJoin(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  std::string node;
  RETURN_IF_ERROR(Read(*o, "node", &node, Str(64)));
  if (node.empty()) return Err(InvalidArgument("node: missing"));
  return node;
}

std::string EncodeJoinReply(const std::string& node, const std::string& credential) {
  return json::serialize(json::object{{"node", node}, {"credential", credential}});
}

Result<std::string> DecodeJoinReply(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  std::string credential;
  RETURN_IF_ERROR(Read(*o, "credential", &credential, Str(256)));
  if (credential.size() < 32) return Err(InvalidArgument("credential: missing"));
  return credential;
}

std::string EncodeRegisterReply(const RegisterReply& r) {
  json::object o;
  o["session"] = r.session;
  o["next_seq"] = r.next_seq;
  if (r.epoch != 0) o["epoch"] = r.epoch;
  if (r.fence_ms != 0) o["fence_ms"] = r.fence_ms;
  if (r.fence_grace_ms != 0) o["fence_grace_ms"] = r.fence_grace_ms;
  return json::serialize(o);
}

Result<RegisterReply> DecodeRegisterReply(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  RegisterReply r;
  RETURN_IF_ERROR(Read(*o, "session", &r.session, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "next_seq", &r.next_seq, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "epoch", &r.epoch, Int(0, INT64_MAX)));
  // Up to a week: a fence longer than that is no fence.
  RETURN_IF_ERROR(Read(*o, "fence_ms", &r.fence_ms, Int(0, 7LL * 24 * 3600 * 1000)));
  RETURN_IF_ERROR(Read(*o, "fence_grace_ms", &r.fence_grace_ms, Int(0, 3600 * 1000)));
  return r;
}

std::string EncodeReportReply(Duration sample_interval) {
  json::object o;
  o["sample_interval_ms"] = sample_interval.count();
  return json::serialize(o);
}

Result<Duration> DecodeReportReply(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  int64_t ms = 0;
  // Up to an hour: a controller asking for rarer readings than that is not believed.
  RETURN_IF_ERROR(Read(*o, "sample_interval_ms", &ms, Int(0, 3600 * 1000)));
  return Duration(ms);
}

std::string EncodeReport(const ReportRequest& r) {
  json::object o;
  o["node"] = r.node;
  o["session"] = r.session;
  json::array events;
  for (const auto& e : r.events) events.emplace_back(EventObject(e));
  o["events"] = std::move(events);
  json::array logs;
  for (const auto& l : r.logs) {
    json::object lo;
    lo["job"] = l.job.value;
    lo["offset"] = l.offset;
    lo["data_b64"] = Base64Encode(l.data);  // logs are bytes, not necessarily UTF-8
    if (l.metrics) lo["stream"] = "metrics";
    logs.emplace_back(std::move(lo));
  }
  o["logs"] = std::move(logs);
  json::array gpus;
  for (const auto& s : r.gpus) gpus.emplace_back(SampleObject(s));
  o["gpus"] = std::move(gpus);
  if (!r.health.empty()) o["health"] = HealthArray(r.health);
  json::array notices;
  for (const GpuNotice& n : r.notices) {
    json::object no;
    no["gpu"] = n.gpu;
    no["xid"] = n.xid;
    no["message"] = n.message;
    no["at"] = TimeValue(n.at);
    notices.emplace_back(std::move(no));
  }
  if (!notices.empty()) o["notices"] = std::move(notices);
  json::array attached;
  for (JobId id : r.attached) attached.emplace_back(id.value);
  o["attached"] = std::move(attached);
  if (r.reclaim) o["reclaim"] = ReclaimObject(*r.reclaim);
  return json::serialize(o);
}

Result<ReportRequest> DecodeReport(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  ReportRequest r;
  RETURN_IF_ERROR(Read(*o, "node", &r.node, Str(64)));
  RETURN_IF_ERROR(Read(*o, "session", &r.session, Int(0, INT64_MAX)));
  if (const json::value* ev = Find(*o, "events")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*ev, "events"));
    for (const auto& e : *a) {
      ASSIGN_OR_RETURN(JobEvent je, EventFrom(e));
      r.events.push_back(std::move(je));
    }
  }
  if (const json::value* lv = Find(*o, "logs")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*lv, "logs"));
    for (const auto& item : *a) {
      ASSIGN_OR_RETURN(const json::object* lo, GetObject(item, "logs[]"));
      LogChunk c;
      RETURN_IF_ERROR(Read(*lo, "job", &c.job.value, Int(1, INT64_MAX)));
      RETURN_IF_ERROR(Read(*lo, "offset", &c.offset, Int(0, INT64_MAX)));
      std::string b64;
      RETURN_IF_ERROR(Read(*lo, "data_b64", &b64, Str(12 << 20)));
      ASSIGN_OR_RETURN(c.data, Base64Decode(b64, "logs[].data_b64"));
      std::string stream = "output";
      RETURN_IF_ERROR(Read(*lo, "stream", &stream, Str(16)));
      if (stream != "output" && stream != "metrics") {
        return Err(InvalidArgument("logs[].stream: must be output or metrics"));
      }
      c.metrics = stream == "metrics";
      r.logs.push_back(std::move(c));
    }
  }
  if (const json::value* gv = Find(*o, "gpus")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*gv, "gpus"));
    for (const auto& s : *a) {
      ASSIGN_OR_RETURN(GpuSample gs, SampleFrom(s));
      r.gpus.push_back(gs);
    }
  }
  ASSIGN_OR_RETURN(r.health, HealthListFrom(*o));
  if (const json::value* nv = Find(*o, "notices")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*nv, "notices"));
    for (const auto& item : *a) {
      ASSIGN_OR_RETURN(const json::object* no, GetObject(item, "notices[]"));
      GpuNotice n;
      RETURN_IF_ERROR(Read(*no, "gpu", &n.gpu, Int(0, 1023)));
      RETURN_IF_ERROR(Read(*no, "xid", &n.xid, Int(0, 1'000'000)));
      RETURN_IF_ERROR(Read(*no, "message", &n.message, Str(512)));
      if (const json::value* t = Find(*no, "at"); t != nullptr && !t->is_null()) {
        ASSIGN_OR_RETURN(n.at, GetTime(*t, "notices[].at"));
      }
      r.notices.push_back(std::move(n));
    }
  }
  if (const json::value* av = Find(*o, "attached")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*av, "attached"));
    if (a->size() > 100000) return Err(InvalidArgument("attached: too many jobs"));
    for (const auto& item : *a) {
      ASSIGN_OR_RETURN(int64_t id, GetInt(item, "attached[]", 1, INT64_MAX));
      r.attached.push_back(JobId{id});
    }
  }
  ASSIGN_OR_RETURN(r.reclaim, ReclaimFrom(*o));
  return r;
}

namespace {

json::object NodeStatusObject(const NodeStatus& n) {
  json::object o = NodeInfoObject(n.info);
  o["state"] = NodeStateName(n.state);
  o["last_seen"] = TimeValue(n.last_seen);
  o["drain_reason"] = n.drain_reason.empty() ? json::value(nullptr) : json::value(n.drain_reason);
  o["cooling_until"] = n.cooling_until ? TimeValue(*n.cooling_until) : json::value(nullptr);
  // Autoscaling's: its template, since when it is in its state, idle since when, and why.
  auto optional_time = [](const std::optional<TimePoint>& t) {
    return t ? TimeValue(*t) : json::value(nullptr);
  };
  auto optional_text = [](const std::string& t) {
    return t.empty() ? json::value(nullptr) : json::value(t);
  };
  o["template"] = optional_text(n.template_name);
  o["state_since"] = optional_time(n.state_since);
  o["idle_since"] = optional_time(n.idle_since);
  o["scaling_reason"] = optional_text(n.scaling_reason);
  auto reconfiguring = [&](int physical) {
    return std::find(n.mig_reconfiguring.begin(), n.mig_reconfiguring.end(), physical) !=
           n.mig_reconfiguring.end();
  };
  if (json::value* parents = o.if_contains("mig_gpus")) {
    for (json::value& p : parents->as_array()) {
      json::object& po = p.as_object();
      po["state"] =
          reconfiguring(static_cast<int>(po["physical"].as_int64())) ? "reconfiguring" : "ready";
    }
  }
  json::array& gpus = o["gpus"].as_array();
  for (size_t i = 0; i < gpus.size(); ++i) {
    json::object& g = gpus[i].as_object();
    if (i < n.info.gpus.size() && !n.mig_reconfiguring.empty() &&
        reconfiguring(n.info.gpus[i].physical))
      g["reconfiguring"] = true;
    bool drained = i < n.gpu_drain_reasons.size() && !n.gpu_drain_reasons[i].empty();
    g["drain_reason"] = drained ? json::value(n.gpu_drain_reasons[i]) : json::value(nullptr);
    const GpuHealth* h = i < n.health.size() ? &n.health[i] : nullptr;
    g["health"] = GpuHealthStateName(h != nullptr ? h->state : GpuHealthState::kOk);
    g["health_reason"] =
        h != nullptr && !h->reason.empty() ? json::value(h->reason) : json::value(nullptr);
    if (i < n.samples.size()) {
      g["utilization_pct"] = n.samples[i].utilization_pct;
      g["memory_used_bytes"] = n.samples[i].memory_used_bytes;
      g["temperature_c"] = n.samples[i].temperature_c;
      g["power_w"] = n.samples[i].power_w;
      g["ecc_uncorrected"] = n.samples[i].ecc_uncorrected;
      g["lost"] = n.samples[i].lost;
    }
    json::array jobs;
    if (i < n.gpu_jobs.size()) {
      for (int64_t id : n.gpu_jobs[i]) jobs.emplace_back(id);
    }
    g["jobs"] = std::move(jobs);
  }
  return o;
}

}  // namespace

std::string EncodeNode(const NodeStatus& node) { return json::serialize(NodeStatusObject(node)); }

std::string EncodeNodeList(const std::vector<NodeStatus>& nodes) {
  json::array a;
  for (const NodeStatus& n : nodes) a.emplace_back(NodeStatusObject(n));
  json::object root;
  root["nodes"] = std::move(a);
  return json::serialize(root);
}

std::string EncodeGpuList(const std::vector<NodeStatus>& nodes) {
  json::array out;
  for (const NodeStatus& n : nodes) {
    for (size_t i = 0; i < n.info.gpus.size(); ++i) {
      const Gpu& g = n.info.gpus[i];
      if (g.vacant) continue;  // a place for a MIG instance, not a device
      json::object o;
      o["node"] = n.info.name;
      o["index"] = g.index;
      o["model"] = g.model;
      o["memory_total_bytes"] = g.memory_bytes;
      o["node_state"] = NodeStateName(n.state);
      o["health"] =
          GpuHealthStateName(i < n.health.size() ? n.health[i].state : GpuHealthState::kOk);
      bool drained = !n.drain_reason.empty() ||
                     (i < n.gpu_drain_reasons.size() && !n.gpu_drain_reasons[i].empty());
      o["drained"] = drained;
      const GpuSample* s = i < n.samples.size() ? &n.samples[i] : nullptr;
      o["utilization_pct"] = s ? json::value(s->utilization_pct) : json::value(nullptr);
      o["memory_used_bytes"] = s ? json::value(s->memory_used_bytes) : json::value(nullptr);
      o["temperature_c"] = s ? json::value(s->temperature_c) : json::value(nullptr);
      o["power_w"] = s ? json::value(s->power_w) : json::value(nullptr);
      json::array ids;
      if (i < n.gpu_jobs.size()) {
        for (int64_t id : n.gpu_jobs[i]) ids.emplace_back(id);
      }
      o["jobs"] = std::move(ids);
      out.emplace_back(std::move(o));
    }
  }
  json::object root;
  root["gpus"] = std::move(out);
  return json::serialize(root);
}

MetricsLine ReadMetricsLine(std::string_view line, std::string_view metric) {
  MetricsLine out;
  if (line.size() > 64 * 1024) return out;
  bool has_checkpoint = line.find("\"checkpoint\"") != std::string_view::npos;
  bool has_metric = !metric.empty() && line.find(metric) != std::string_view::npos;
  if (!has_checkpoint && !has_metric) return out;
  auto v = Parse(line);
  if (!v || !v->is_object()) return out;
  const json::object& o = v->get_object();
  if (const json::value* c = Find(o, "checkpoint");
      c != nullptr && c->is_string() && !c->get_string().empty()) {
    out.checkpoint = std::string(c->get_string().subview(0, 4096));
  }
  if (has_metric) {
    const json::value* m = Find(o, metric);
    if (m != nullptr && m->is_number()) {
      double value = m->to_number<double>();
      if (std::isfinite(value)) out.value = value;
    }
    const json::value* step = Find(o, "step");
    if (step != nullptr && step->is_int64() && step->get_int64() >= 0) out.step = step->get_int64();
  }
  return out;
}

std::optional<std::string> CheckpointFromMetricsLine(std::string_view line) {
  if (line.find("\"checkpoint\"") == std::string_view::npos || line.size() > 64 * 1024)
    return std::nullopt;
  auto v = Parse(line);
  if (!v || !v->is_object()) return std::nullopt;
  const json::value* c = Find(v->get_object(), "checkpoint");
  if (c == nullptr || !c->is_string() || c->get_string().empty()) return std::nullopt;
  return std::string(c->get_string().subview(0, 4096));
}

Result<DrainBody> DecodeDrainBody(std::string_view text) {
  DrainBody body;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return body;
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "body"));
  for (const auto& kv : *o) {
    if (kv.key() != "gpus" && kv.key() != "reason") {
      return Err(InvalidArgument("body: unknown field \"" + std::string(kv.key().substr(0, 64)) +
                                 "\" (use gpus, reason)"));
    }
  }
  if (const json::value* g = Find(*o, "gpus")) {
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*g, "gpus"));
    if (a->size() > 1024) return Err(InvalidArgument("gpus: more than 1024"));
    for (const auto& x : *a) {
      ASSIGN_OR_RETURN(int64_t idx, GetInt(x, "gpus[]", 0, 1023));
      body.gpus.push_back(static_cast<int>(idx));
    }
  }
  if (const json::value* r = Find(*o, "reason")) {
    ASSIGN_OR_RETURN(body.reason, GetString(*r, "reason", 256));
  }
  return body;
}

Result<std::vector<NodeStatus>> DecodeNodeList(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* root, GetObject(v, ""));
  const json::value* list = Find(*root, "nodes");
  if (list == nullptr) return Err(InvalidArgument("nodes: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*list, "nodes"));
  std::vector<NodeStatus> out;
  for (const auto& item : *a) {
    NodeStatus n;
    ASSIGN_OR_RETURN(n.info, NodeInfoFrom(item));
    const json::object& o = item.get_object();
    RETURN_IF_ERROR(Read(o, "state", &n.state, Named<NodeState>(kNodeStateNames)));
    if (const json::value* t = Find(o, "last_seen")) {
      ASSIGN_OR_RETURN(n.last_seen, GetTime(*t, "last_seen"));
    }
    if (const json::value* t = Find(o, "cooling_until"); t != nullptr && !t->is_null()) {
      ASSIGN_OR_RETURN(n.cooling_until, GetTime(*t, "cooling_until"));
    }
    RETURN_IF_ERROR(Read(o, "template", &n.template_name, Str(64)));
    RETURN_IF_ERROR(Read(o, "scaling_reason", &n.scaling_reason, Str(1024)));
    for (auto [key, at] :
         {std::pair{"state_since", &n.state_since}, std::pair{"idle_since", &n.idle_since}}) {
      if (const json::value* t = Find(o, key)) {
        ASSIGN_OR_RETURN(*at, GetTime(*t, key));
      }
    }
    if (const json::value* d = Find(o, "drain_reason"); d != nullptr && d->is_string()) {
      n.drain_reason = std::string(d->get_string().subview(0, 256));
    }
    if (const json::value* mv = Find(o, "mig_gpus"); mv != nullptr && mv->is_array()) {
      for (const auto& p : mv->get_array()) {
        const json::value* st = p.is_object() ? Find(p.get_object(), "state") : nullptr;
        const json::value* ph = p.is_object() ? Find(p.get_object(), "physical") : nullptr;
        if (st != nullptr && st->is_string() && st->get_string() == "reconfiguring" &&
            ph != nullptr && ph->is_int64())
          n.mig_reconfiguring.push_back(static_cast<int>(ph->get_int64()));
      }
    }
    if (const json::value* gv = Find(o, "gpus"); gv != nullptr && gv->is_array()) {
      for (const auto& g : gv->get_array()) {
        ASSIGN_OR_RETURN(GpuSample s, SampleFrom(g));
        n.samples.push_back(s);
        std::vector<int64_t> ids;
        if (g.is_object()) {
          if (const json::value* jobs = Find(g.get_object(), "jobs");
              jobs != nullptr && jobs->is_array()) {
            for (const auto& id : jobs->get_array()) {
              if (id.is_int64()) ids.push_back(id.get_int64());
            }
          }
        }
        n.gpu_jobs.push_back(std::move(ids));
        std::string why;
        if (g.is_object()) {
          if (const json::value* d = Find(g.get_object(), "drain_reason");
              d != nullptr && d->is_string()) {
            why = std::string(d->get_string().subview(0, 256));
          }
        }
        n.gpu_drain_reasons.push_back(std::move(why));
        GpuHealth h{.index = static_cast<int>(n.health.size())};
        if (g.is_object()) {
          if (const json::value* st = Find(g.get_object(), "health");
              st != nullptr && st->is_string()) {
            // An unknown state from a newer controller shows as a fault, not as healthy.
            h.state = ParseGpuHealthState(std::string_view(st->get_string()))
                          .value_or(GpuHealthState::kReset);
          }
          if (const json::value* r = Find(g.get_object(), "health_reason");
              r != nullptr && r->is_string()) {
            h.reason = std::string(r->get_string().subview(0, 512));
          }
        }
        n.health.push_back(std::move(h));
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace baton::codec
