// JSON <-> what operators read and send: usage, job metrics, cluster events (also the alert
// webhooks' body), fault injections and tokens. The agent protocol and node views are in
// protocol_codec.cc.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "codec/internal/json_util.h"
#include "codec/json_codec.h"

namespace baton::codec {

using namespace internal;

std::string EncodeUsage(const std::vector<UsageRow>& projects, const std::vector<UsageRow>& users,
                        const std::optional<NodeCosts>& nodes, const std::string& currency) {
  auto rows = [](const std::vector<UsageRow>& list, bool with_user) {
    json::array a;
    for (const UsageRow& u : list) {
      json::object o;
      o["project"] = u.project;
      if (with_user) o["user"] = u.user;
      o["jobs"] = u.jobs;
      o["running"] = u.running;
      o["gpu_seconds"] = u.gpu_seconds;
      o["gpu_hours"] = u.gpu_seconds / 3600.0;
      o["cost"] = u.cost;
      o["idle_cost"] = u.idle_cost;
      o["fairshare_usage"] = u.fairshare_usage;
      if (u.budget) {
        o["budget"] = *u.budget;
        o["budget_period"] = u.budget_period;
        o["budget_spent"] = u.budget_spent;
        o["budget_used_pct"] = *u.budget > 0 ? 100.0 * u.budget_spent / *u.budget : 100.0;
      }
      a.emplace_back(std::move(o));
    }
    return a;
  };
  json::object root;
  root["currency"] = currency;
  root["projects"] = rows(projects, false);
  root["users"] = rows(users, true);
  if (nodes) {
    json::object n;
    json::array templates;
    for (const NodeCostRow& t : nodes->templates) {
      templates.emplace_back(json::object{{"template", t.template_name},
                                          {"spot", t.spot},
                                          {"node_seconds", t.node_seconds},
                                          {"node_hours", t.node_seconds / 3600.0},
                                          {"cost", t.cost},
                                          {"idle_cost", t.idle_cost},
                                          {"peak_nodes", t.peak_nodes},
                                          {"fixed_cost", t.fixed_cost}});
    }
    n["templates"] = std::move(templates);
    n["window_seconds"] = nodes->window_seconds;
    n["node_seconds"] = nodes->node_seconds;
    n["node_hours"] = nodes->node_seconds / 3600.0;
    n["cost"] = nodes->cost;
    n["idle_cost"] = nodes->idle_cost;
    n["fixed_cost"] = nodes->fixed_cost;
    n["saved"] = nodes->saved();
    root["nodes"] = std::move(n);
  }
  return json::serialize(root);
}

namespace {

Result<UsageRow> UsageRowFrom(const json::value& v, bool with_user) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "usage row"));
  UsageRow u;
  RETURN_IF_ERROR(Read(*o, "project", &u.project, Str(64)));
  if (with_user) RETURN_IF_ERROR(Read(*o, "user", &u.user, Str(64)));
  RETURN_IF_ERROR(Read(*o, "jobs", &u.jobs, Int(0, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "running", &u.running, Int(0, INT64_MAX)));
  for (auto [key, field] :
       {std::pair{"gpu_seconds", &u.gpu_seconds}, std::pair{"cost", &u.cost},
        std::pair{"idle_cost", &u.idle_cost}, std::pair{"fairshare_usage", &u.fairshare_usage}}) {
    if (const json::value* f = Find(*o, key)) {
      ASSIGN_OR_RETURN(*field, GetNumber(*f, key));
    }
  }
  if (const json::value* b = Find(*o, "budget"); b != nullptr && !b->is_null()) {
    ASSIGN_OR_RETURN(double budget, GetNumber(*b, "budget"));
    u.budget = budget;
    RETURN_IF_ERROR(Read(*o, "budget_period", &u.budget_period, Str(16)));
    if (const json::value* s = Find(*o, "budget_spent")) {
      ASSIGN_OR_RETURN(u.budget_spent, GetNumber(*s, "budget_spent"));
    }
  }
  return u;
}

Result<double> NumberAt(const json::object& o, const char* key) {
  const json::value* f = Find(o, key);
  if (f == nullptr) return 0.0;
  return GetNumber(*f, key);
}

Result<NodeCosts> NodeCostsFrom(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "nodes"));
  NodeCosts n;
  for (auto [key, field] :
       {std::pair{"window_seconds", &n.window_seconds}, std::pair{"node_seconds", &n.node_seconds},
        std::pair{"cost", &n.cost}, std::pair{"idle_cost", &n.idle_cost},
        std::pair{"fixed_cost", &n.fixed_cost}}) {
    ASSIGN_OR_RETURN(*field, NumberAt(*o, key));
  }
  const json::value* list = Find(*o, "templates");
  if (list == nullptr) return n;
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*list, "nodes.templates"));
  for (const json::value& item : *a) {
    ASSIGN_OR_RETURN(const json::object* t, GetObject(item, "nodes.templates[]"));
    NodeCostRow row;
    RETURN_IF_ERROR(Read(*t, "template", &row.template_name, Str(64)));
    if (const json::value* s = Find(*t, "spot"); s != nullptr && s->is_bool())
      row.spot = s->as_bool();
    for (auto [key, field] :
         {std::pair{"node_seconds", &row.node_seconds}, std::pair{"cost", &row.cost},
          std::pair{"idle_cost", &row.idle_cost}, std::pair{"fixed_cost", &row.fixed_cost}}) {
      ASSIGN_OR_RETURN(*field, NumberAt(*t, key));
    }
    ASSIGN_OR_RETURN(double peak, NumberAt(*t, "peak_nodes"));
    row.peak_nodes = static_cast<int>(std::clamp(peak, 0.0, 1e6));
    n.templates.push_back(std::move(row));
  }
  return n;
}

}  // namespace

Result<Usage> DecodeUsage(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  Usage u;
  if (Find(*o, "currency") != nullptr) RETURN_IF_ERROR(Read(*o, "currency", &u.currency, Str(16)));
  for (auto [key, list, with_user] :
       {std::tuple{"projects", &u.projects, false}, std::tuple{"users", &u.users, true}}) {
    const json::value* l = Find(*o, key);
    if (l == nullptr) continue;
    ASSIGN_OR_RETURN(const json::array* a, GetArray(*l, key));
    for (const json::value& item : *a) {
      ASSIGN_OR_RETURN(UsageRow row, UsageRowFrom(item, with_user));
      list->push_back(std::move(row));
    }
  }
  if (const json::value* n = Find(*o, "nodes"); n != nullptr && !n->is_null()) {
    ASSIGN_OR_RETURN(u.nodes, NodeCostsFrom(*n));
  }
  return u;
}

std::string EncodeMetricsLines(JobId job, std::string_view node, std::string_view data,
                               int64_t offset, int64_t size, bool ended) {
  size_t whole = data.rfind('\n');
  whole = whole == std::string_view::npos ? 0 : whole + 1;
  // The rest of an ended job's file is its last line; a running job may still be writing it.
  if (ended && offset + static_cast<int64_t>(data.size()) >= size) whole = data.size();
  json::array lines;
  size_t start = 0;
  while (start < whole) {
    size_t nl = data.find('\n', start);
    if (nl == std::string_view::npos || nl > whole) nl = whole;
    boost::system::error_code ec;
    json::value v = json::parse(data.substr(start, nl - start), ec);
    if (!ec && v.is_object()) lines.emplace_back(std::move(v));
    start = nl + 1;
  }
  json::object o;
  o["job"] = job.value;
  o["node"] = node;
  o["offset"] = offset;
  o["next"] = offset + static_cast<int64_t>(whole);
  o["size"] = size;
  o["ended"] = ended;
  o["lines"] = std::move(lines);
  return json::serialize(o);
}

std::string EncodeJobMetrics(const JobMetrics& m) {
  json::object o;
  o["job"] = m.job;
  o["state"] = JobStateName(m.state);
  o["gpu_seconds"] = std::round(m.gpu_seconds * 1000) / 1000;
  o["cost"] = m.cost;
  o["cost_per_hour"] = m.cost_per_hour;
  o["currency"] = m.currency;
  json::array gpus;
  for (const JobGpuReading& g : m.gpus) {
    json::object x;
    x["node"] = g.node;
    x["index"] = g.index;
    x["milli"] = g.milli;
    x["model"] = g.model;
    x["memory_total_bytes"] = g.memory_total_bytes;
    if (g.sample) {
      x["utilization_pct"] = g.sample->utilization_pct;
      x["memory_used_bytes"] = g.sample->memory_used_bytes;
      x["temperature_c"] = g.sample->temperature_c;
      x["power_w"] = g.sample->power_w;
    } else {
      for (const char* k : {"utilization_pct", "memory_used_bytes", "temperature_c", "power_w"})
        x[k] = nullptr;
    }
    gpus.emplace_back(std::move(x));
  }
  o["gpus"] = std::move(gpus);
  o["mean_utilization_pct"] = m.samples > 0
                                  ? json::value(m.utilization_sum / static_cast<double>(m.samples))
                                  : json::value(nullptr);
  o["samples"] = m.samples;
  return json::serialize(o);
}

namespace {

json::object EventObject(const ClusterEvent& e) {
  json::object o;
  o["seq"] = e.seq;
  o["at"] = TimeValue(e.at);
  o["kind"] = EventKindName(e.kind);
  o["severity"] = SeverityName(e.severity);
  o["node"] = e.node;
  o["gpu"] = e.gpu >= 0 ? json::value(e.gpu) : json::value(nullptr);
  o["job"] = e.job > 0 ? json::value(e.job) : json::value(nullptr);
  if (!e.project.empty()) o["project"] = e.project;
  o["message"] = e.message;
  return o;
}

}  // namespace

std::string EncodeEvent(const ClusterEvent& event) { return json::serialize(EventObject(event)); }

namespace {

Result<ClusterEvent> EventFromValue(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "event"));
  ClusterEvent e;
  RETURN_IF_ERROR(Read(*o, "seq", &e.seq, Int(0, INT64_MAX)));
  if (const json::value* t = Find(*o, "at")) {
    ASSIGN_OR_RETURN(e.at, GetTime(*t, "at"));
  }
  RETURN_IF_ERROR(Read(*o, "kind", &e.kind, Named<EventKind>(kEventKindNames)));
  RETURN_IF_ERROR(Read(*o, "severity", &e.severity, Named<Severity>(kSeverityNames)));
  if (Find(*o, "node") != nullptr) RETURN_IF_ERROR(Read(*o, "node", &e.node, Str(64)));
  if (const json::value* g = Find(*o, "gpu"); g != nullptr && !g->is_null()) {
    ASSIGN_OR_RETURN(int64_t gpu, GetInt(*g, "gpu", 0, 1023));
    e.gpu = static_cast<int>(gpu);
  }
  if (const json::value* j = Find(*o, "job"); j != nullptr && !j->is_null()) {
    ASSIGN_OR_RETURN(e.job, GetInt(*j, "job", 1, INT64_MAX));
  }
  if (Find(*o, "project") != nullptr) RETURN_IF_ERROR(Read(*o, "project", &e.project, Str(64)));
  RETURN_IF_ERROR(Read(*o, "message", &e.message, Str(4096)));
  return e;
}

}  // namespace

Result<ClusterEvent> DecodeEvent(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  return EventFromValue(v);
}

Result<std::vector<ClusterEvent>> DecodeEvents(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  const json::value* l = Find(*o, "events");
  if (l == nullptr) return Err(InvalidArgument("events: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*l, "events"));
  std::vector<ClusterEvent> out;
  for (const json::value& item : *a) {
    ASSIGN_OR_RETURN(ClusterEvent e, EventFromValue(item));
    out.push_back(std::move(e));
  }
  return out;
}

std::string EncodeEvents(const std::vector<ClusterEvent>& events) {
  json::array a;
  for (const ClusterEvent& e : events) {
    a.emplace_back(EventObject(e));
  }
  json::object root;
  root["events"] = std::move(a);
  return json::serialize(root);
}

Result<InjectBody> DecodeInjectBody(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "body"));
  for (const auto& kv : *o) {
    std::string_view k = kv.key();
    if (k != "gpu" && k != "fault" && k != "xid" && k != "value" && k != "duration") {
      return Err(InvalidArgument("body: unknown field \"" + std::string(k.substr(0, 64)) +
                                 "\" (use gpu, fault, xid, value, duration)"));
    }
  }
  InjectBody body;
  FaultInjection& f = body.fault;
  if (Find(*o, "fault") == nullptr)
    return Err(InvalidArgument("fault: missing (xid, temperature, ecc, lost, clear or silence)"));
  if (!Read(*o, "fault", &f.fault, Named<FaultKind>(kFaultKindNames)).ok())
    return Err(InvalidArgument("fault: must be xid, temperature, ecc, lost, clear or silence"));
  if (Find(*o, "gpu") == nullptr && f.fault != FaultKind::kSilence)
    return Err(InvalidArgument("gpu: missing"));
  RETURN_IF_ERROR(Read(*o, "gpu", &f.gpu, Int(0, 1023)));
  RETURN_IF_ERROR(Read(*o, "value", &f.value, Int(0, 1'000'000)));
  RETURN_IF_ERROR(Read(*o, "xid", &f.value, Int(1, 1'000'000)));
  if (f.fault == FaultKind::kXid && f.value == 0)
    return Err(InvalidArgument("xid: missing (the XID to inject, e.g. 79)"));
  if ((f.fault == FaultKind::kTemperature || f.fault == FaultKind::kEcc) && f.value == 0) {
    return Err(InvalidArgument(
        "value: missing (" +
        std::string(f.fault == FaultKind::kEcc ? "the number of errors" : "degrees Celsius") +
        ")"));
  }
  if (const json::value* d = Find(*o, "duration")) {
    ASSIGN_OR_RETURN(f.duration, GetDuration(*d, "duration"));
  }
  if (f.fault == FaultKind::kSilence &&
      (f.duration.count() <= 0 || f.duration > std::chrono::hours(1))) {
    return Err(InvalidArgument("duration: silence needs one, up to 1h"));
  }
  return body;
}

namespace {

// A role by its name ("user", "admin", "agent").
Result<Role> GetRole(const json::value& v, std::string_view field) {
  ASSIGN_OR_RETURN(std::string name, GetString(v, field, 16));
  return ParseRole(name);
}

}  // namespace

Result<TokenBody> DecodeTokenBody(std::string_view text) {
  TokenBody body;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return body;
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "body"));
  for (const auto& kv : *o) {
    if (kv.key() != "user" && kv.key() != "role" && kv.key() != "name") {
      return Err(InvalidArgument("body: unknown field \"" + std::string(kv.key().substr(0, 64)) +
                                 "\" (use user, role, name)"));
    }
  }
  RETURN_IF_ERROR(Read(*o, "user", &body.user, Str(64)));
  RETURN_IF_ERROR(Read(*o, "role", &body.role, GetRole));
  RETURN_IF_ERROR(Read(*o, "name", &body.name, Str(64)));
  return body;
}

namespace {

json::object TokenObject(const TokenInfo& t) {
  json::object o;
  o["id"] = t.id;
  o["user"] = t.user;
  o["role"] = RoleName(t.role);
  o["name"] = t.name;
  o["created_at"] = TimeValue(t.created_at);
  o["revoked"] = t.revoked;
  if (!t.secret.empty()) o["token"] = t.secret;
  return o;
}

Result<TokenInfo> TokenFrom(const json::value& v) {
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, "token"));
  TokenInfo t;
  RETURN_IF_ERROR(Read(*o, "id", &t.id, Int(1, INT64_MAX)));
  RETURN_IF_ERROR(Read(*o, "user", &t.user, Str(64)));
  RETURN_IF_ERROR(Read(*o, "role", &t.role, GetRole));
  RETURN_IF_ERROR(Read(*o, "name", &t.name, Str(64)));
  if (const json::value* c = Find(*o, "created_at")) {
    ASSIGN_OR_RETURN(t.created_at, GetTime(*c, "created_at"));
  }
  RETURN_IF_ERROR(Read(*o, "revoked", &t.revoked, Bool()));
  RETURN_IF_ERROR(Read(*o, "token", &t.secret, Str(256)));
  return t;
}

}  // namespace

std::string EncodeToken(const TokenInfo& t) { return json::serialize(TokenObject(t)); }

std::string EncodeTokenList(const std::vector<TokenInfo>& tokens) {
  json::array a;
  for (const TokenInfo& t : tokens) a.emplace_back(TokenObject(t));
  json::object root;
  root["tokens"] = std::move(a);
  return json::serialize(root);
}

Result<TokenInfo> DecodeToken(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  return TokenFrom(v);
}

Result<std::vector<TokenInfo>> DecodeTokenList(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* root, GetObject(v, ""));
  const json::value* list = Find(*root, "tokens");
  if (list == nullptr) return Err(InvalidArgument("tokens: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*list, "tokens"));
  std::vector<TokenInfo> out;
  for (const auto& item : *a) {
    ASSIGN_OR_RETURN(TokenInfo t, TokenFrom(item));
    out.push_back(std::move(t));
  }
  return out;
}

std::string EncodeModelList(const std::vector<ModelShape>& models) {
  json::array a;
  for (const ModelShape& m : models) {
    json::object o;
    o["name"] = m.name;
    o["params"] = m.params;
    o["layers"] = m.layers;
    o["hidden"] = m.hidden;
    o["heads"] = m.heads;
    o["kv_heads"] = m.kv_heads;
    o["head_dim"] = HeadDim(m);
    o["vocab"] = m.vocab;
    a.emplace_back(std::move(o));
  }
  json::object o;
  o["models"] = std::move(a);
  return json::serialize(o);
}

Result<std::vector<ModelShape>> DecodeModelList(std::string_view text) {
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ASSIGN_OR_RETURN(const json::object* o, GetObject(v, ""));
  const json::value* list = Find(*o, "models");
  if (list == nullptr) return Err(InvalidArgument("models: missing"));
  ASSIGN_OR_RETURN(const json::array* a, GetArray(*list, "models"));
  std::vector<ModelShape> out;
  for (const auto& mv : *a) {
    ASSIGN_OR_RETURN(const json::object* m, GetObject(mv, "models[]"));
    ModelShape shape;
    int64_t n = 0;
    for (auto [key, at] : {std::pair{"layers", &shape.layers}, std::pair{"hidden", &shape.hidden},
                           std::pair{"heads", &shape.heads}, std::pair{"kv_heads", &shape.kv_heads},
                           std::pair{"head_dim", &shape.head_dim}}) {
      const json::value* f = Find(*m, key);
      if (f == nullptr) return Err(InvalidArgument(std::string("models[].") + key + ": missing"));
      ASSIGN_OR_RETURN(n, GetInt(*f, key, 0, 1'000'000));
      *at = static_cast<int>(n);
    }
    const json::value* name = Find(*m, "name");
    const json::value* params = Find(*m, "params");
    const json::value* vocab = Find(*m, "vocab");
    if (name == nullptr || params == nullptr || vocab == nullptr)
      return Err(InvalidArgument("models[]: needs name, params and vocab"));
    ASSIGN_OR_RETURN(shape.name, GetString(*name, "name", 64));
    ASSIGN_OR_RETURN(shape.params, GetNumber(*params, "params"));
    ASSIGN_OR_RETURN(shape.vocab, GetInt(*vocab, "vocab", 0, 100'000'000));
    out.push_back(std::move(shape));
  }
  return out;
}

}  // namespace baton::codec
