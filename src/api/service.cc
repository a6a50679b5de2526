#include "api/service.h"

#include <algorithm>
#include <charconv>
#include <ranges>

#include "api/metrics.h"
#include "api/service_internal.h"
#include "codec/json_codec.h"
#include "core/log.h"
#include "core/node.h"

namespace baton::api {
namespace internal {

Response Error(const Status& st) {
  return Response{.status = HttpStatus(st.code()), .body = codec::EncodeError(st)};
}

Response Json(int status, std::string body) {
  return Response{.status = status, .body = std::move(body)};
}

Result<int64_t> BoundedInt(const std::string& name, const std::string& text, int64_t lo,
                           int64_t hi) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) {
    return Err(InvalidArgument(name + ": must be a whole number between " + std::to_string(lo) +
                               " and " + std::to_string(hi)));
  }
  return v;
}

Result<int64_t> QueryInt(const Request& req, const std::string& key, int64_t lo, int64_t hi,
                         int64_t fallback) {
  std::string text = QueryText(req, key);
  if (text.empty()) return fallback;
  return BoundedInt(key, text, lo, hi);
}

std::string QueryText(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it == req.query.end() ? "" : it->second;
}

std::vector<std::string> QueryList(const Request& req, const std::string& key) {
  std::string text = QueryText(req, key);
  std::vector<std::string> out;
  if (text.empty()) return out;
  for (auto part : std::views::split(text, ',')) out.emplace_back(part.begin(), part.end());
  return out;
}

bool QueryFlag(const Request& req, const std::string& key) {
  std::string v = QueryText(req, key);
  return v == "1" || v == "true" || v == "yes";
}

Result<bool> QueryBool(const Request& req, const std::string& key) {
  std::string v = QueryText(req, key);
  if (v == "true" || v == "1") return true;
  if (v.empty() || v == "false" || v == "0") return false;
  return Err(InvalidArgument(key + ": true or false (got \"" + v.substr(0, 32) + "\")"));
}

std::optional<int64_t> PositiveInt(const std::string& text) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

Result<JobRef> JobIdParam(const Call& c) {
  const std::string& text = c.Param("id");
  size_t under = text.find('_');
  auto id = PositiveInt(text.substr(0, under));
  std::optional<int64_t> index;
  if (under != std::string::npos) {
    std::string rest = text.substr(under + 1);
    index = rest == "0" ? std::optional<int64_t>(0) : PositiveInt(rest);
    if (index && *index > SpecLimits::kMaxArrayIndex) index.reset();
  }
  if (!id || (under != std::string::npos && !index)) {
    return Err(InvalidArgument("job id: \"" + text.substr(0, 32) +
                               "\" is not a job id (12) or a task of an array (12_7)"));
  }
  return JobRef{JobId{*id}, index ? static_cast<int>(*index) : -1};
}

control::Caller CallerOf(const Identity& who) {
  return control::Caller{.user = who.user, .admin = who.role == Role::kAdmin};
}

void Redact(Job& job, const Identity& who) {
  if (who.role != Role::kAdmin && job.user != who.user) job.spec.env.clear();
}

}  // namespace internal

using namespace internal;

namespace {

codec::TokenInfo Info(const store::Token& t, std::string secret = "") {
  return codec::TokenInfo{.id = t.id,
                          .user = t.user,
                          .role = t.role,
                          .name = t.name,
                          .created_at = t.created_at,
                          .revoked = t.revoked,
                          .secret = std::move(secret)};
}

}  // namespace

int HttpStatus(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
      return 400;
    case Code::kUnauthenticated:
      return 401;
    case Code::kPermissionDenied:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kConflict:
      return 409;
    case Code::kTooLarge:
      return 413;
    case Code::kUnavailable:
      return 503;
    case Code::kInternal:
      return 500;
  }
  return 500;
}

Service::Service(Deps deps)
    : loop_(deps.loop),
      logs_(deps.logs),
      news_(deps.news),
      post_to_io_(std::move(deps.post_to_io)),
      code_(deps.code),
      placements_(deps.placements),
      epoch_(deps.epoch),
      reports_dir_(std::move(deps.reports_dir)),
      router_(deps.tokens, Routes()) {}

// docs/api.md, "Routes", says the same.
std::vector<Route> Service::Routes() {
  using A = Access;
  using K = control::JobAction::Kind;
  auto to = [this](void (Service::*handler)(Call)) {
    return [this, handler](Call c) { (this->*handler)(std::move(c)); };
  };
  auto action = [this](K kind) { return [this, kind](Call c) { JobAction(std::move(c), kind); }; };
  auto drain = [this](bool on) { return [this, on](Call c) { Drain(std::move(c), on); }; };
  return {
      {"*", "/healthz", A::kPublic, [](Call c) { c.respond(Json(200, R"({"status":"ok"})")); }},
      {"GET", "/v1/openapi.json", A::kPublic, to(&Service::OpenApi)},
      // Prometheus scrapes with any token (a `user` token made for it is enough).
      {"GET", "/metrics", A::kAnyToken, to(&Service::Metrics)},
      {"POST", "/v1/agent/join", A::kJoinOrAdmin, to(&Service::AgentJoin)},
      {"POST", "/v1/agent/register", A::kAgentOrAdmin, to(&Service::AgentRegister)},
      {"GET", "/v1/agent/orders", A::kAgentOrAdmin, to(&Service::AgentOrders)},
      {"POST", "/v1/agent/report", A::kAgentOrAdmin, to(&Service::AgentReport)},
      {"GET", "/v1/agent/tunnels/{tunnel}", A::kAgentOrAdmin, to(&Service::AgentTunnel)},
      {"GET", "/v1/code/{id}", A::kAgentOrAdmin, to(&Service::GetCode)},
      {"POST", "/v1/code", A::kUserOrAdmin, to(&Service::PutCode)},
      {"POST", "/v1/jobs", A::kUserOrAdmin, to(&Service::SubmitOne)},
      {"GET", "/v1/jobs", A::kUserOrAdmin, to(&Service::ListJobs)},
      {"POST", "/v1/jobs/batch", A::kUserOrAdmin, to(&Service::SubmitBatch)},
      {"GET", "/v1/jobs/{id}", A::kUserOrAdmin, to(&Service::ShowJob)},
      {"PATCH", "/v1/jobs/{id}", A::kUserOrAdmin, to(&Service::UpdateJob)},
      {"POST", "/v1/jobs/{id}/cancel", A::kUserOrAdmin, action(K::kCancel)},
      {"POST", "/v1/jobs/{id}/hold", A::kUserOrAdmin, action(K::kHold)},
      {"POST", "/v1/jobs/{id}/release", A::kUserOrAdmin, action(K::kRelease)},
      {"POST", "/v1/jobs/{id}/resubmit", A::kUserOrAdmin, to(&Service::Resubmit)},
      {"GET", "/v1/jobs/{id}/logs", A::kUserOrAdmin, to(&Service::Logs)},
      {"GET", "/v1/jobs/{id}/metrics", A::kUserOrAdmin, to(&Service::ShowJobMetrics)},
      {"GET", "/v1/jobs/{id}/metrics/lines", A::kUserOrAdmin, to(&Service::MetricsLines)},
      {"GET", "/v1/jobs/{id}/preemption", A::kUserOrAdmin, to(&Service::Preemption)},
      {"GET", "/v1/jobs/{id}/wait", A::kUserOrAdmin, to(&Service::WaitEnd)},
      {"GET", "/v1/jobs/{id}/attach", A::kUserOrAdmin,
       [this](Call c) { OpenTunnel(std::move(c), TunnelTo::kSession); }},
      {"GET", "/v1/jobs/{id}/forward", A::kUserOrAdmin,
       [this](Call c) { OpenTunnel(std::move(c), TunnelTo::kPort); }},
      {"GET", "/v1/jobs/{id}/step", A::kUserOrAdmin,
       [this](Call c) { OpenTunnel(std::move(c), TunnelTo::kStep); }},
      {"GET", "/v1/queue", A::kUserOrAdmin, to(&Service::Queue)},
      {"GET", "/v1/crons", A::kUserOrAdmin, to(&Service::ListCrons)},
      {"DELETE", "/v1/crons/{id}", A::kUserOrAdmin, to(&Service::DeleteCron)},
      // The models `baton size` and `submit --model` know: the configuration's, then built in.
      {"GET", "/v1/models", A::kUserOrAdmin,
       [this](Call c) {
         Run(control::ListModels{}, std::move(c.respond),
             [](control::ModelList& r) { return Json(200, codec::EncodeModelList(r.models)); });
       }},
      {"GET", "/v1/nodes", A::kUserOrAdmin, to(&Service::ListNodes)},
      {"GET", "/v1/nodes/{name}", A::kUserOrAdmin, to(&Service::ShowNode)},
      {"POST", "/v1/nodes/{name}/drain", A::kAdmin, drain(true),
       "only an admin drains or undrains nodes"},
      {"POST", "/v1/nodes/{name}/undrain", A::kAdmin, drain(false),
       "only an admin drains or undrains nodes"},
      {"POST", "/v1/nodes/{name}/revoke", A::kAdmin, to(&Service::RevokeNode)},
      {"POST", "/v1/nodes/{name}/inject", A::kAdmin, to(&Service::Inject),
       "only an admin injects faults"},
      {"GET", "/v1/events", A::kUserOrAdmin, to(&Service::Events)},
      {"GET", "/v1/usage", A::kUserOrAdmin, to(&Service::Usage)},
      // Who the token acts as: `baton cancel --all` cancels that user's jobs.
      {"GET", "/v1/whoami", A::kUserOrAdmin,
       [](Call c) {
         c.respond(Json(200, "{\"user\":" + codec::EncodeString(c.who.user) +
                                 ",\"role\":" + codec::EncodeString(RoleName(c.who.role)) + "}"));
       }},
      {"GET", "/v1/reports", A::kUserOrAdmin, to(&Service::ListReports)},
      {"GET", "/v1/reports/{name}/{file}", A::kUserOrAdmin, to(&Service::ReportFile)},
      // The dashboard: its page and assets need no token (the page asks for one).
      {"GET", "/", A::kPublic, to(&Service::UiFile)},
      {"GET", "/ui", A::kPublic, to(&Service::UiFile)},
      {"GET", "/ui/{file}", A::kPublic, to(&Service::UiFile)},
      {"GET", "/ui/assets/{file}", A::kPublic, to(&Service::UiFile)},
      {"POST", "/v1/tokens", A::kUserOrAdmin, to(&Service::CreateToken)},
      {"GET", "/v1/tokens", A::kUserOrAdmin, to(&Service::ListTokens)},
      {"POST", "/v1/tokens/{id}/revoke", A::kUserOrAdmin, to(&Service::RevokeToken)},
  };
}

void Service::Handle(Request request, Respond respond) {
  router_.Dispatch(std::move(request), std::move(respond));
}

void Service::Post(control::Command command, std::function<void(control::Reply&)> on_reply) {
  loop_.Post(std::move(command),
             [this, on_reply = std::move(on_reply)](control::Reply reply) mutable {
               post_to_io_([on_reply = std::move(on_reply), reply = std::move(reply)]() mutable {
                 on_reply(reply);
               });
             });
}

void Service::Encoded(control::Command command, Respond respond,
                      std::function<Response(control::Reply&)> encode) {
  Post(std::move(command),
       [respond = std::move(respond), encode = std::move(encode)](control::Reply& reply) {
         if (!reply.status.ok()) return respond(Error(reply.status));
         respond(encode(reply));
       });
}

void Service::OpenApi(Call c) { c.respond(Json(200, OpenApiDocument())); }

void Service::Metrics(Call c) {
  Run(control::GetMetrics{}, std::move(c.respond),
      [stats = loop_.stats()](control::MetricsShown& r) {
        Response res = Json(200, RenderMetrics(*r.metrics, stats));
        res.content_type = "text/plain; version=0.0.4; charset=utf-8";
        return res;
      });
}

// A node's credential acts for that node only (api/auth.h); admins act for any.
static Status ActsFor(const Identity& who, const std::string& node) {
  if (who.role != Role::kAgent || who.user == node) return Status::Ok();
  return PermissionDenied("this credential is node " + who.user + "'s, not node " + node + "'s");
}

// A new node: its credential, shown this once, for the node protocol from now on.
void Service::AgentJoin(Call c) {
  auto node = codec::DecodeJoin(c.request.body);
  if (!node) return c.respond(Error(node.error()));
  if (!IsValidNodeName(*node))
    return c.respond(Error(InvalidArgument("node: not a valid node name")));
  auto secret = NewToken();
  if (!secret) return c.respond(Error(secret.error()));
  control::JoinNode join{.node = *node, .join_token = c.who.token_id, .hash = TokenHash(*secret)};
  Run(std::move(join), std::move(c.respond),
      [node = *node, secret = *secret](control::TokenShown&) {
        return Json(201, codec::EncodeJoinReply(node, secret));
      });
}

void Service::RevokeNode(Call c) {
  control::RevokeNode revoke{.caller = CallerOf(c.who), .node = c.Param("name")};
  Run(std::move(revoke), std::move(c.respond), [](control::TokenList& r) {
    std::vector<codec::TokenInfo> list;
    for (const store::Token& t : r.tokens) list.push_back(Info(t));
    return Json(200, codec::EncodeTokenList(list));
  });
}

void Service::AgentRegister(Call c) {
  auto reg = codec::DecodeRegister(c.request.body);
  if (!reg) return c.respond(Error(reg.error()));
  if (Status st = ActsFor(c.who, reg->node.name); !st.ok()) return c.respond(Error(st));
  Run(control::AgentRegister{std::move(*reg)}, std::move(c.respond),
      [epoch = epoch_](RegisterReply& r) {
        r.epoch = epoch;
        return Json(200, codec::EncodeRegisterReply(r));
      });
}

void Service::AgentOrders(Call c) {
  control::AgentPoll poll;
  poll.node = QueryText(c.request, "node");
  if (Status st = ActsFor(c.who, poll.node); !st.ok()) return c.respond(Error(st));
  auto session = QueryInt(c.request, "session", 0, INT64_MAX, 0);
  auto after = QueryInt(c.request, "after", 0, INT64_MAX, 0);
  if (!session) return c.respond(Error(session.error()));
  if (!after) return c.respond(Error(after.error()));
  poll.session = static_cast<uint64_t>(*session);
  poll.after = static_cast<uint64_t>(*after);
  Run(std::move(poll), std::move(c.respond), [epoch = epoch_](control::PollAnswer& r) {
    for (Order& o : r.orders) o.epoch = epoch;
    return Json(200, codec::EncodeOrders(r.orders));
  });
}

void Service::AgentReport(Call c) {
  auto report = codec::DecodeReport(c.request.body);
  if (!report) return c.respond(Error(report.error()));
  if (!IsValidNodeName(report->node))
    return c.respond(Error(InvalidArgument("node: not a valid node name")));
  if (Status st = ActsFor(c.who, report->node); !st.ok()) return c.respond(Error(st));
  // Logs land before the report reaches the controller: once an exit is acknowledged, the
  // output before it is on disk here. What the store does not keep (its disk's reserve, a log
  // past the largest) is acknowledged all the same, and raised as an alert.
  // Only for the node's own jobs: a chunk of any other is not written (and not refused, so
  // that an agent's trailing output of a job that ended meanwhile does not block its reports).
  if (placements_ != nullptr) {
    auto foreign = [&](const LogChunk& l) { return !placements_->Placed(l.job, report->node); };
    auto first = std::find_if(report->logs.begin(), report->logs.end(), foreign);
    if (first != report->logs.end()) {
      LogWarn("node " + report->node + " sent output of job " + first->job.ToString() +
                  ", which is not placed on it: not written",
              LogContext{.component = "api", .node = report->node, .job = first->job.value});
      std::erase_if(report->logs, foreign);
    }
  }
  control::AgentReport command;
  for (const LogChunk& chunk : report->logs) {
    LogStore::Dropped dropped;
    Status st = logs_.Write(chunk.job, report->node, chunk.offset, chunk.data,
                            chunk.metrics ? LogStream::kMetrics : LogStream::kOutput, &dropped);
    if (!st.ok()) return c.respond(Error(st));
    if (dropped.bytes > 0) {
      command.log_bytes_dropped += dropped.bytes;
      command.dropped_job = chunk.job;
      command.dropped_why = std::move(dropped.why);
    }
  }
  for (const LogChunk& chunk : report->logs) news_.jobs.Notify(chunk.job.value);  // followers
  report->logs.clear();
  command.report = std::move(*report);
  Run(std::move(command), std::move(c.respond), [](control::ReportAnswer& r) {
    return Json(200, codec::EncodeReportReply(r.sample_interval));
  });
}

void Service::ListNodes(Call c) {
  Run(control::ListNodes{}, std::move(c.respond),
      [](control::NodeList& r) { return Json(200, codec::EncodeNodeList(r.nodes)); });
}

void Service::ShowNode(Call c) {
  Run(control::ListNodes{}, std::move(c.respond), [name = c.Param("name")](control::NodeList& r) {
    for (const NodeStatus& n : r.nodes) {
      if (n.info.name == name) return Json(200, codec::EncodeNode(n));
    }
    return Error(NotFound("node " + name + " is not known"));
  });
}

void Service::Drain(Call c, bool drain) {
  control::DrainNode d{.caller = CallerOf(c.who), .node = c.Param("name"), .drain = drain};
  if (!IsValidNodeName(d.node))
    return c.respond(Error(InvalidArgument("node: not a valid node name")));
  auto body = codec::DecodeDrainBody(c.request.body);
  if (!body) return c.respond(Error(body.error()));
  d.gpus = std::move(body->gpus);
  d.reason = std::move(body->reason);
  Run(std::move(d), std::move(c.respond),
      [](control::NodeList& r) { return Json(200, codec::EncodeNodeList(r.nodes)); });
}

void Service::Inject(Call c) {
  const std::string& node = c.Param("name");
  if (!IsValidNodeName(node))
    return c.respond(Error(InvalidArgument("node: not a valid node name")));
  auto body = codec::DecodeInjectBody(c.request.body);
  if (!body) return c.respond(Error(body.error()));
  Run(control::InjectFault{CallerOf(c.who), node, body->fault}, std::move(c.respond),
      [](control::NodeList& r) { return Json(202, codec::EncodeNodeList(r.nodes)); });
}

void Service::Events(Call c) {
  if (QueryFlag(c.request, "stream") ||
      c.request.accept.find("text/event-stream") != std::string::npos) {
    return EventStream(std::move(c));
  }
  auto after = QueryInt(c.request, "after", 0, INT64_MAX, 0);
  auto limit = QueryInt(c.request, "limit", 1, 10000, 1000);
  if (!after) return c.respond(Error(after.error()));
  if (!limit) return c.respond(Error(limit.error()));
  Run(control::GetEvents{.after = *after, .limit = static_cast<int>(*limit)}, std::move(c.respond),
      [](control::EventList& r) { return Json(200, codec::EncodeEvents(r.events)); });
}

void Service::Usage(Call c) {
  control::GetUsage usage;
  for (auto [key, at] : {std::pair{"since", &usage.since}, std::pair{"until", &usage.until}}) {
    std::string text = QueryText(c.request, key);
    if (text.empty()) continue;
    auto t = ParseRfc3339(text);
    if (!t) return c.respond(Error(InvalidArgument(std::string(key) + ": " + t.error().message())));
    *at = *t;
  }
  Run(usage, std::move(c.respond), [](control::UsageReport& r) {
    return Json(200, codec::EncodeUsage(r.projects, r.users, r.nodes, r.currency));
  });
}

// A new token, its secret shown this once. It works once this is answered: the loop hands the
// new record to the TokenTable before the batch's replies leave (api/auth.h).
void Service::CreateToken(Call c) {
  auto body = codec::DecodeTokenBody(c.request.body);
  if (!body) return c.respond(Error(body.error()));
  auto secret = NewToken();
  if (!secret) return c.respond(Error(secret.error()));
  control::CreateToken create{.caller = CallerOf(c.who),
                              .user = body->user.empty() ? c.who.user : body->user,
                              .role = body->role,
                              .name = body->name,
                              .hash = TokenHash(*secret)};
  Run(std::move(create), std::move(c.respond), [secret = *secret](control::TokenShown& r) {
    return Json(201, codec::EncodeToken(Info(r.token, secret)));
  });
}

// The caller's tokens (an admin's: all).
void Service::ListTokens(Call c) {
  Run(control::ListTokens{CallerOf(c.who)}, std::move(c.respond), [](control::TokenList& r) {
    std::vector<codec::TokenInfo> list;
    for (const store::Token& t : r.tokens) list.push_back(Info(t));
    return Json(200, codec::EncodeTokenList(list));
  });
}

void Service::RevokeToken(Call c) {
  auto id = PositiveInt(c.Param("id"));
  if (!id) return c.respond(Error(InvalidArgument("token id: must be a positive integer")));
  Run(control::RevokeToken{CallerOf(c.who), *id}, std::move(c.respond),
      [](control::TokenShown& r) { return Json(200, codec::EncodeToken(Info(r.token))); });
}

}  // namespace baton::api
