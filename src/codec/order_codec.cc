// JSON <-> the controller's orders to an agent (GET /v1/agent/orders): launch, stop, inject,
// readmit, tunnel and note; the rest of the agent protocol is in protocol_codec.cc.
#include "codec/internal/json_util.h"
#include "codec/json_codec.h"

namespace baton::codec {
namespace {

using namespace internal;

json::array IntArray(const std::vector<int>& v) {
  json::array a;
  for (int x : v) a.emplace_back(x);
  return a;
}

Result<std::vector<int>> GetIntArray(const json::value& v, std::string_view field, int64_t hi) {
  ASSIGN_OR_RETURN(const json::array* a, GetArray(v, field));
  std::vector<int> out;
  for (const auto& x : *a) {
    ASSIGN_OR_RETURN(int64_t n, GetInt(x, field, 0, hi));
    out.push_back(static_cast<int>(n));
  }
  return out;
}

json::array EnvArray(const std::vector<std::pair<std::string, std::string>>& env) {
  json::array a;
  for (const auto& [k, v] : env) a.emplace_back(json::array{json::value(k), json::value(v)});
  return a;
}

}  // namespace

std::string EncodeOrders(const std::vector<Order>& orders) {
  json::array a;
  for (const Order& ord : orders) {
    json::object o;
    o["seq"] = ord.seq;
    if (ord.epoch != 0) o["epoch"] = ord.epoch;
    if (ord.kind == Order::Kind::kLaunch) {
      const LaunchOrder& l = ord.launch;
      o["kind"] = "launch";
      o["job"] = l.job.value;
      o["attempt"] = l.attempt;
      if (l.array_id.value != 0) {
        o["array_id"] = l.array_id.value;
        o["array_index"] = l.array_index;
      }
      o["name"] = l.name;
      o["user"] = l.user;
      json::array cmd;
      for (const auto& c : l.command) cmd.emplace_back(c);
      o["command"] = std::move(cmd);
      o["shell"] = l.shell;
      o["env"] = EnvArray(l.env);
      o["workdir"] = l.workdir;
      if (!l.venv.empty()) o["venv"] = l.venv;
      if (!l.checkpoint_dir.empty()) o["checkpoint_dir"] = l.checkpoint_dir;
      if (!l.checkpoint_group.empty()) o["checkpoint_group"] = l.checkpoint_group;
      if (l.output_limit > 0) o["output_limit"] = l.output_limit;
      if (!l.best_metric.empty()) o["best_metric"] = l.best_metric;
      if (!l.conda.empty()) o["conda"] = l.conda;
      if (l.interactive != Interactive::kNone) o["interactive"] = InteractiveName(l.interactive);
      if (!l.code.empty()) o["code"] = l.code;
      if (!l.image.empty()) o["image"] = l.image;
      o["gpus"] = IntArray(l.gpus);
      o["milli_per_gpu"] = l.milli_per_gpu;
      o["gpu_memory_bytes"] = l.gpu_memory_bytes;
      o["cpus"] = l.cpus;
      o["memory_bytes"] = l.memory_bytes;
      o["time_limit_ms"] = l.time_limit.count();
      o["grace_period_ms"] = l.grace_period.count();
      if (l.signal != 0) {
        o["signal"] = l.signal;
        o["signal_before_ms"] = l.signal_before.count();
        if (l.signal_shell) o["signal_shell"] = true;
      }
      o["nodelist"] = l.nodelist;
      o["node_rank"] = l.node_rank;
      o["num_nodes"] = l.num_nodes;
      o["master_addr"] = l.master_addr;
      o["master_port"] = l.master_port;
      o["processes"] = l.processes;
      o["rank_offset"] = l.rank_offset;
      o["world_size"] = l.world_size;
      if (l.batch) o["batch"] = true;
      if (l.slurm_env) o["slurm_env"] = true;
      if (l.alloc) o["alloc"] = true;
      if (!l.output_file.empty()) o["output_file"] = l.output_file;
      if (!l.error_file.empty()) o["error_file"] = l.error_file;
      if (l.tasks_per_node > 0) o["tasks_per_node"] = l.tasks_per_node;
      if (!l.node_addrs.empty()) {
        json::array addrs;
        for (const std::string& a : l.node_addrs) addrs.emplace_back(a);
        o["node_addrs"] = std::move(addrs);
      }
      if (l.step_port > 0) o["step_port"] = l.step_port;
      if (!l.step_key.empty()) o["step_key"] = l.step_key;
    } else if (ord.kind == Order::Kind::kTunnel) {
      o["kind"] = "tunnel";
      o["tunnel"] = ord.tunnel.id;
      o["job"] = ord.tunnel.job.value;
      o["attempt"] = ord.tunnel.attempt;
      o["port"] = ord.tunnel.port;
      if (!ord.tunnel.step_key.empty()) o["step_key"] = ord.tunnel.step_key;
    } else if (ord.kind == Order::Kind::kNote) {
      o["kind"] = "note";
      o["job"] = ord.note.job.value;
      o["attempt"] = ord.note.attempt;
      o["message"] = ord.note.message;
    } else if (ord.kind == Order::Kind::kMig) {
      o["kind"] = "mig";
      o["physical"] = ord.mig.physical;
      auto slices = [](const std::vector<MigSlice>& list) {
        json::array a;
        for (const MigSlice& m : list)
          a.emplace_back(json::object{{"profile", m.profile}, {"start", m.start}});
        return a;
      };
      o["destroy"] = slices(ord.mig.destroy);
      o["create"] = slices(ord.mig.create);
    } else if (ord.kind == Order::Kind::kReadmit) {
      o["kind"] = "readmit";
      o["gpu"] = ord.inject.gpu;
    } else if (ord.kind == Order::Kind::kInject) {
      o["kind"] = "inject";
      o["gpu"] = ord.inject.gpu;
      o["fault"] = FaultKindName(ord.inject.fault);
      o["value"] = ord.inject.value;
      o["duration_ms"] = ord.inject.duration.count();
    } else {
      o["kind"] = "stop";
      o["job"] = ord.stop.job.value;
      o["attempt"] = ord.stop.attempt;
      o["reason"] = StopReasonName(ord.stop.reason);
      o["grace_period_ms"] = ord.stop.grace_period.count();
    }
    a.emplace_back(std::move(o));
  }
  json::object root;
  root["orders"] = std::move(a);
  return json::serialize(root);
}

namespace {

// The steps of DecodeOrders: one order of each kind. An absent field keeps its default; `ms`
// carries over between the duration fields of one order, as Read leaves it when one is absent.

Result<LaunchOrder> LaunchFrom(const json::object& o) {
  LaunchOrder l;
  int64_t ms = 0;
  RETURN_IF_ERROR(Read(o, "job", &l.job.value, Int(1, INT64_MAX)));
  RETURN_IF_ERROR(Read(o, "attempt", &l.attempt, Int(0, 1'000'000)));
  RETURN_IF_ERROR(Read(o, "array_id", &l.array_id.value, Int(1, INT64_MAX)));
  RETURN_IF_ERROR(Read(o, "array_index", &l.array_index, Int(0, SpecLimits::kMaxArrayIndex)));
  RETURN_IF_ERROR(Read(o, "name", &l.name, Str(1024)));
  RETURN_IF_ERROR(Read(o, "user", &l.user, Str(256)));
  RETURN_IF_ERROR(Read(o, "shell", &l.shell, Bool()));
  RETURN_IF_ERROR(Read(o, "workdir", &l.workdir, Str(4096)));
  RETURN_IF_ERROR(Read(o, "venv", &l.venv, Str(4096)));
  RETURN_IF_ERROR(Read(o, "checkpoint_dir", &l.checkpoint_dir, Str(4096)));
  RETURN_IF_ERROR(Read(o, "checkpoint_group", &l.checkpoint_group, Str(64)));
  RETURN_IF_ERROR(Read(o, "output_limit", &l.output_limit, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(o, "best_metric", &l.best_metric, Str(64)));
  RETURN_IF_ERROR(Read(o, "conda", &l.conda, Str(4096)));
  RETURN_IF_ERROR(Read(o, "interactive", &l.interactive, Named<Interactive>(kInteractiveNames)));
  RETURN_IF_ERROR(Read(o, "code", &l.code, Str(64)));
  RETURN_IF_ERROR(Read(o, "image", &l.image, Str(512)));
  if (!l.code.empty() && !IsCodeId(l.code)) return Err(InvalidArgument("code: not a snapshot id"));
  RETURN_IF_ERROR(Read(o, "milli_per_gpu", &l.milli_per_gpu, Int(0, 1000)));
  RETURN_IF_ERROR(Read(o, "gpu_memory_bytes", &l.gpu_memory_bytes, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(o, "cpus", &l.cpus, Int(0, 1'000'000)));
  RETURN_IF_ERROR(Read(o, "memory_bytes", &l.memory_bytes, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(o, "time_limit_ms", &ms, Int(0, INT64_MAX)));
  l.time_limit = Duration(ms);
  RETURN_IF_ERROR(Read(o, "grace_period_ms", &ms, Int(0, INT64_MAX)));
  l.grace_period = Duration(ms);
  RETURN_IF_ERROR(Read(o, "signal", &l.signal, Int(0, 64)));
  ms = 0;
  RETURN_IF_ERROR(Read(o, "signal_before_ms", &ms, Int(0, INT64_MAX)));
  l.signal_before = Duration(ms);
  RETURN_IF_ERROR(Read(o, "signal_shell", &l.signal_shell, Bool()));
  RETURN_IF_ERROR(Read(o, "nodelist", &l.nodelist, Str(1 << 20)));
  RETURN_IF_ERROR(Read(o, "node_rank", &l.node_rank, Int(0, 1'000'000)));
  RETURN_IF_ERROR(Read(o, "num_nodes", &l.num_nodes, Int(1, 1'000'000)));
  RETURN_IF_ERROR(Read(o, "master_addr", &l.master_addr, Str(255)));
  RETURN_IF_ERROR(Read(o, "master_port", &l.master_port, Int(0, 65535)));
  RETURN_IF_ERROR(Read(o, "processes", &l.processes, Int(1, 4096)));
  RETURN_IF_ERROR(Read(o, "rank_offset", &l.rank_offset, Int(0, 1 << 24)));
  RETURN_IF_ERROR(Read(o, "world_size", &l.world_size, Int(1, 1 << 24)));
  RETURN_IF_ERROR(Read(o, "batch", &l.batch, Bool()));
  RETURN_IF_ERROR(Read(o, "slurm_env", &l.slurm_env, Bool()));
  RETURN_IF_ERROR(Read(o, "alloc", &l.alloc, Bool()));
  RETURN_IF_ERROR(Read(o, "output_file", &l.output_file, Str(4096)));
  RETURN_IF_ERROR(Read(o, "error_file", &l.error_file, Str(4096)));
  RETURN_IF_ERROR(Read(o, "tasks_per_node", &l.tasks_per_node, Int(0, 1024)));
  RETURN_IF_ERROR(Read(o, "step_port", &l.step_port, Int(0, 65535)));
  RETURN_IF_ERROR(Read(o, "step_key", &l.step_key, Str(128)));
  if (const json::value* a = Find(o, "node_addrs")) {
    ASSIGN_OR_RETURN(const json::array* addrs, GetArray(*a, "node_addrs"));
    if (addrs->size() > 1'000'000) return Err(InvalidArgument("node_addrs: too many"));
    for (const auto& addr : *addrs) {
      ASSIGN_OR_RETURN(std::string s, GetString(addr, "node_addrs[]", 255));
      l.node_addrs.push_back(std::move(s));
    }
  }
  if (const json::value* c = Find(o, "command")) {
    ASSIGN_OR_RETURN(const json::array* cmd, GetArray(*c, "command"));
    for (const auto& arg : *cmd) {
      ASSIGN_OR_RETURN(std::string s, GetString(arg, "command[]", 1 << 20));
      l.command.push_back(std::move(s));
    }
  }
  if (const json::value* e = Find(o, "env")) {
    ASSIGN_OR_RETURN(const json::array* env, GetArray(*e, "env"));
    for (const auto& pair : *env) {
      ASSIGN_OR_RETURN(const json::array* kv, GetArray(pair, "env[]"));
      if (kv->size() != 2) return Err(InvalidArgument("env[]: must be [key, value]"));
      ASSIGN_OR_RETURN(std::string k, GetString((*kv)[0], "env[].key", 256));
      ASSIGN_OR_RETURN(std::string val, GetString((*kv)[1], "env[].value", 1 << 20));
      l.env.emplace_back(std::move(k), std::move(val));
    }
  }
  if (const json::value* g = Find(o, "gpus")) {
    ASSIGN_OR_RETURN(l.gpus, GetIntArray(*g, "gpus", 1023));
  }
  return l;
}

Result<StopOrder> StopFrom(const json::object& o) {
  StopOrder s;
  int64_t ms = 0;
  RETURN_IF_ERROR(Read(o, "job", &s.job.value, Int(1, INT64_MAX)));
  RETURN_IF_ERROR(Read(o, "attempt", &s.attempt, Int(0, 1'000'000)));
  std::string reason;
  RETURN_IF_ERROR(Read(o, "reason", &reason, Str(32)));
  for (StopReason r : {StopReason::kCancel, StopReason::kPreempt, StopReason::kTimeLimit,
                       StopReason::kNodeFailure}) {
    if (reason == StopReasonName(r)) s.reason = r;
  }
  RETURN_IF_ERROR(Read(o, "grace_period_ms", &ms, Int(0, INT64_MAX)));
  s.grace_period = Duration(ms);
  return s;
}

Result<FaultInjection> InjectionFrom(const json::object& o) {
  FaultInjection f;
  int64_t ms = 0;
  RETURN_IF_ERROR(Read(o, "gpu", &f.gpu, Int(0, 1023)));
  if (!Read(o, "fault", &f.fault, Named<FaultKind>(kFaultKindNames)).ok())
    return Err(
        InvalidArgument("order.fault: must be xid, temperature, ecc, lost, clear or silence"));
  RETURN_IF_ERROR(Read(o, "value", &f.value, Int(0, 1'000'000)));
  RETURN_IF_ERROR(Read(o, "duration_ms", &ms, Int(0, INT64_MAX)));
  f.duration = Duration(ms);
  return f;
}

Result<Order> OrderFrom(const json::value& item) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(item, "order"));
  Order ord;
  RETURN_IF_ERROR(Read(*o, "seq", &ord.seq, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "epoch", &ord.epoch, Int(0, INT64_MAX)));
  std::string kind;
  RETURN_IF_ERROR(Read(*o, "kind", &kind, Str(16)));
  if (kind == "launch") {
    ord.kind = Order::Kind::kLaunch;
    ASSIGN_OR_RETURN(ord.launch, LaunchFrom(*o));
  } else if (kind == "stop") {
    ord.kind = Order::Kind::kStop;
    ASSIGN_OR_RETURN(ord.stop, StopFrom(*o));
  } else if (kind == "tunnel") {
    ord.kind = Order::Kind::kTunnel;
    RETURN_IF_ERROR(Read(*o, "tunnel", &ord.tunnel.id, Str(64)));
    RETURN_IF_ERROR(Read(*o, "job", &ord.tunnel.job.value, Int(1, INT64_MAX)));
    RETURN_IF_ERROR(Read(*o, "attempt", &ord.tunnel.attempt, Int(0, INT32_MAX)));
    RETURN_IF_ERROR(Read(*o, "port", &ord.tunnel.port, Int(0, 65535)));
    RETURN_IF_ERROR(Read(*o, "step_key", &ord.tunnel.step_key, Str(128)));
  } else if (kind == "note") {
    ord.kind = Order::Kind::kNote;
    RETURN_IF_ERROR(Read(*o, "job", &ord.note.job.value, Int(1, INT64_MAX)));
    RETURN_IF_ERROR(Read(*o, "attempt", &ord.note.attempt, Int(0, INT32_MAX)));
    RETURN_IF_ERROR(Read(*o, "message", &ord.note.message, Str(4096)));
  } else if (kind == "mig") {
    ord.kind = Order::Kind::kMig;
    RETURN_IF_ERROR(Read(*o, "physical", &ord.mig.physical, Int(0, 1023)));
    for (auto [key, list] :
         {std::pair{"destroy", &ord.mig.destroy}, std::pair{"create", &ord.mig.create}}) {
      const json::value* lv = Find(*o, key);
      if (lv == nullptr) continue;
      ASSIGN_OR_RETURN(const json::array* a, GetArray(*lv, std::string("order.") + key));
      if (a->size() > static_cast<size_t>(kMigMemorySlices))
        return Err(InvalidArgument(std::string("order.") + key + ": more than 8 MIG instances"));
      for (const auto& m : *a) {
        ASSIGN_OR_RETURN(const json::object* mo, GetObject(m, std::string("order.") + key + "[]"));
        MigSlice slice;
        RETURN_IF_ERROR(Read(*mo, "profile", &slice.profile, Str(32)));
        RETURN_IF_ERROR(Read(*mo, "start", &slice.start, Int(0, kMigMemorySlices - 1)));
        list->push_back(std::move(slice));
      }
    }
  } else if (kind == "readmit") {
    ord.kind = Order::Kind::kReadmit;
    RETURN_IF_ERROR(Read(*o, "gpu", &ord.inject.gpu, Int(0, 1023)));
  } else if (kind == "inject") {
    ord.kind = Order::Kind::kInject;
    ASSIGN_OR_RETURN(ord.inject, InjectionFrom(*o));
  } else {
    return Err(
        InvalidArgument("order.kind: must be launch, stop, inject, readmit, tunnel, note or mig"));
  }
  return ord;
}

}  // namespace

Result<std::vector<Order>> DecodeOrders(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* root, GetObject(v, ""));
  const json::value* list = Find(*root, "orders");
  if (list == nullptr) return Err(InvalidArgument("orders: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*list, "orders"));
  std::vector<Order> out;
  for (const auto& item : *a) {
    ASSIGN_OR_RETURN(Order ord, OrderFrom(item));
    out.push_back(std::move(ord));
  }
  return out;
}

}  // namespace baton::codec
