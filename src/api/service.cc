#include "api/service.h"

#include <charconv>

#include "api/metrics.h"
#include "api/service_internal.h"
#include "codec/json_codec.h"
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
  auto it = req.query.find(key);
  if (it == req.query.end() || it->second.empty()) return fallback;
  return BoundedInt(key, it->second, lo, hi);
}

bool QueryFlag(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it != req.query.end() &&
         (it->second == "1" || it->second == "true" || it->second == "yes");
}

control::Caller CallerOf(const Identity& who) {
  return control::Caller{.user = who.user, .admin = who.role == Role::kAdmin};
}

// A job as `who` may see it: another user's environment (tokens, keys) stays theirs.
void Redact(Job& job, const Identity& who) {
  if (who.role != Role::kAdmin && job.user != who.user) job.spec.env.clear();
}

}  // namespace internal

using namespace internal;

namespace {

// Splits "/v1/jobs/12/cancel" into its segments.
std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

Result<int64_t> ParseJobId(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) {
    return Err(InvalidArgument("job id: \"" + s.substr(0, 32) + "\" is not a positive integer"));
  }
  return v;
}

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

Service::Service(control::ControllerLoop& loop, TokenRegistry& tokens, LogStore& logs,
                 PostToIo post_to_io)
    : loop_(loop), tokens_(tokens), logs_(logs), post_to_io_(std::move(post_to_io)) {}

void Service::Ask(control::Command command, std::function<void(control::Reply&)> on_reply) {
  loop_.Post(std::move(command),
             [this, on_reply = std::move(on_reply)](control::Reply reply) mutable {
               post_to_io_([on_reply = std::move(on_reply), reply = std::move(reply)]() mutable {
                 on_reply(reply);
               });
             });
}

void Service::Run(control::Command command, Respond respond,
                  std::function<Response(control::Reply&)> encode) {
  Ask(std::move(command),
      [respond = std::move(respond), encode = std::move(encode)](control::Reply& reply) {
        if (!reply.status.ok()) {
          respond(Error(reply.status));
          return;
        }
        respond(encode(reply));
      });
}

void Service::Handle(Request req, Respond respond) {
  std::vector<std::string> seg = Segments(req.path);
  if (seg.size() == 1 && seg[0] == "healthz") {
    respond(Json(200, R"({"status":"ok"})"));
    return;
  }
  if (seg.size() == 2 && seg[0] == "v1" && seg[1] == "openapi.json") {
    if (req.method != "GET") {
      return respond(Json(
          405, codec::EncodeError(InvalidArgument(req.method + " is not allowed on " + req.path))));
    }
    return respond(Json(200, OpenApiDocument()));
  }
  bool metrics = seg.size() == 1 && seg[0] == "metrics";
  if (!metrics && (seg.empty() || seg[0] != "v1")) {
    respond(Error(NotFound("no such endpoint: " + req.path.substr(0, 128))));
    return;
  }
  auto who = tokens_.Authenticate(req.authorization);
  if (!who) {
    Response r = Error(who.error());
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    respond(std::move(r));
    return;
  }
  const bool get = req.method == "GET";
  const bool post = req.method == "POST";
  auto method_not_allowed = [&] {
    respond(Json(
        405, codec::EncodeError(InvalidArgument(req.method + " is not allowed on " + req.path))));
  };
  if (metrics) {
    // Prometheus scrapes with any token (a `user` token made for it is enough).
    if (!get) return method_not_allowed();
    Run(control::GetMetrics{}, std::move(respond), [stats = loop_.stats()](control::Reply& r) {
      Response res = Json(200, RenderMetrics(*r.metrics, stats));
      res.content_type = "text/plain; version=0.0.4; charset=utf-8";
      return res;
    });
    return;
  }

  // The node protocol: agents (and admins) only.
  if (seg.size() >= 2 && seg[1] == "agent") {
    if (who->role == Role::kUser) {
      respond(Error(PermissionDenied("the node protocol needs an agent token")));
      return;
    }
    if (seg.size() == 3 && seg[2] == "register" && post) {
      auto reg = codec::DecodeRegister(req.body);
      if (!reg) return respond(Error(reg.error()));
      Run(control::AgentRegister{std::move(*reg)}, std::move(respond),
          [](control::Reply& r) { return Json(200, codec::EncodeRegisterReply(r.registration)); });
      return;
    }
    if (seg.size() == 3 && seg[2] == "orders" && get) {
      control::AgentPoll poll;
      poll.node = req.query["node"];
      auto session = QueryInt(req, "session", 0, INT64_MAX, 0);
      auto after = QueryInt(req, "after", 0, INT64_MAX, 0);
      if (!session) return respond(Error(session.error()));
      if (!after) return respond(Error(after.error()));
      poll.session = static_cast<uint64_t>(*session);
      poll.after = static_cast<uint64_t>(*after);
      Run(std::move(poll), std::move(respond),
          [](control::Reply& r) { return Json(200, codec::EncodeOrders(r.orders)); });
      return;
    }
    if (seg.size() == 3 && seg[2] == "report" && post) {
      AgentReport(req, std::move(respond));
      return;
    }
    return respond(Error(NotFound("no such endpoint: " + req.path.substr(0, 128))));
  }
  if (who->role == Role::kAgent) {
    respond(Error(PermissionDenied("an agent token is for the node protocol only")));
    return;
  }

  if (seg.size() == 2 && seg[1] == "jobs") {
    if (post) return Submit(*who, req, std::move(respond), false);
    if (!get) return method_not_allowed();
    control::ListJobs list;
    list.caller = CallerOf(*who);
    if (auto it = req.query.find("state"); it != req.query.end() && !it->second.empty()) {
      std::string states = it->second;
      size_t i = 0;
      while (i <= states.size()) {
        size_t j = states.find(',', i);
        if (j == std::string::npos) j = states.size();
        auto st = ParseJobState(states.substr(i, j - i));
        if (!st) return respond(Error(st.error()));
        list.states.push_back(*st);
        i = j + 1;
      }
    }
    list.user = req.query["user"];
    list.project = req.query["project"];
    auto limit = QueryInt(req, "limit", 1, 1000, 100);
    auto after = QueryInt(req, "after", 0, INT64_MAX, 0);
    if (!limit) return respond(Error(limit.error()));
    if (!after) return respond(Error(after.error()));
    list.limit = static_cast<int>(*limit);
    list.after = *after;
    Run(std::move(list), std::move(respond), [who = *who](control::Reply& r) {
      std::vector<const Job*> jobs;
      for (Job& j : r.jobs) {
        Redact(j, who);
        jobs.push_back(&j);
      }
      return Json(200, codec::EncodeJobList(jobs, r.next));
    });
    return;
  }
  if (seg.size() == 3 && seg[1] == "jobs" && seg[2] == "batch") {
    if (!post) return method_not_allowed();
    return Submit(*who, req, std::move(respond), true);
  }
  if (seg.size() >= 3 && seg[1] == "jobs") {
    auto id = ParseJobId(seg[2]);
    if (!id) return respond(Error(id.error()));
    if (seg.size() == 3) {
      if (!get) return method_not_allowed();
      Run(control::GetJob{CallerOf(*who), JobId{*id}}, std::move(respond),
          [who = *who](control::Reply& r) {
            Redact(r.jobs.at(0), who);
            return Json(200, codec::EncodeJobDetail(r.jobs.at(0),
                                                    r.factors.empty() ? nullptr : &r.factors[0],
                                                    r.queue_position));
          });
      return;
    }
    if (seg.size() == 4 && seg[3] == "logs") {
      if (!get) return method_not_allowed();
      return Logs(*who, req, *id, std::move(respond));
    }
    if (seg.size() == 4 && seg[3] == "metrics") {
      if (!get) return method_not_allowed();
      return ShowJobMetrics(*who, *id, std::move(respond));
    }
    if (seg.size() == 4 && (seg[3] == "cancel" || seg[3] == "hold" || seg[3] == "release")) {
      if (!post) return method_not_allowed();
      using K = control::JobAction::Kind;
      K kind = seg[3] == "cancel" ? K::kCancel : seg[3] == "hold" ? K::kHold : K::kRelease;
      Run(control::JobAction{CallerOf(*who), JobId{*id}, kind}, std::move(respond),
          [](control::Reply& r) { return Json(200, codec::EncodeJob(r.jobs.at(0))); });
      return;
    }
  }
  if (seg.size() == 4 && seg[1] == "nodes" && (seg[3] == "drain" || seg[3] == "undrain")) {
    if (!post) return method_not_allowed();
    control::DrainNode d;
    d.caller = CallerOf(*who);
    d.node = seg[2];
    d.drain = seg[3] == "drain";
    if (!IsValidNodeName(d.node))
      return respond(Error(InvalidArgument("node: not a valid node name")));
    auto body = codec::DecodeDrainBody(req.body);
    if (!body) return respond(Error(body.error()));
    d.gpus = std::move(body->gpus);
    d.reason = std::move(body->reason);
    Run(std::move(d), std::move(respond),
        [](control::Reply& r) { return Json(200, codec::EncodeNodeList(r.nodes)); });
    return;
  }
  if (seg.size() == 4 && seg[1] == "nodes" && seg[3] == "inject") {
    if (!post) return method_not_allowed();
    if (!IsValidNodeName(seg[2]))
      return respond(Error(InvalidArgument("node: not a valid node name")));
    auto body = codec::DecodeInjectBody(req.body);
    if (!body) return respond(Error(body.error()));
    Run(control::InjectFault{CallerOf(*who), seg[2], body->fault}, std::move(respond),
        [](control::Reply& r) { return Json(202, codec::EncodeNodeList(r.nodes)); });
    return;
  }
  if (seg.size() >= 2 && seg[1] == "tokens") return Tokens(*who, req, seg, std::move(respond));
  if (seg.size() == 2 && seg[1] == "usage") {
    if (!get) return method_not_allowed();
    Run(control::GetUsage{}, std::move(respond), [](control::Reply& r) {
      return Json(200, codec::EncodeUsage(r.usage_projects, r.usage_users, r.currency));
    });
    return;
  }
  if (seg.size() == 2 && seg[1] == "events") {
    if (!get) return method_not_allowed();
    if (QueryFlag(req, "stream") || req.accept.find("text/event-stream") != std::string::npos) {
      return EventStream(req, std::move(respond));
    }
    auto after = QueryInt(req, "after", 0, INT64_MAX, 0);
    auto limit = QueryInt(req, "limit", 1, 10000, 1000);
    if (!after) return respond(Error(after.error()));
    if (!limit) return respond(Error(limit.error()));
    Run(control::GetEvents{.after = *after, .limit = static_cast<int>(*limit)}, std::move(respond),
        [](control::Reply& r) { return Json(200, codec::EncodeEvents(r.events)); });
    return;
  }
  if (seg.size() == 2 && seg[1] == "queue") {
    if (!get) return method_not_allowed();
    control::GetQueue q;
    q.caller = CallerOf(*who);
    auto limit = QueryInt(req, "limit", 1, 1000, 100);
    auto offset = QueryInt(req, "offset", 0, INT64_MAX, 0);
    if (!limit) return respond(Error(limit.error()));
    if (!offset) return respond(Error(offset.error()));
    q.limit = static_cast<int>(*limit);
    q.offset = *offset;
    Run(std::move(q), std::move(respond), [who = *who](control::Reply& r) {
      for (Job& j : r.jobs) Redact(j, who);
      return Json(200, codec::EncodeQueue(r.jobs, r.factors, r.next));
    });
    return;
  }
  if (seg.size() >= 2 && seg[1] == "nodes") {
    if (!get) return method_not_allowed();
    std::string name = seg.size() >= 3 ? seg[2] : "";
    if (seg.size() > 3)
      return respond(Error(NotFound("no such endpoint: " + req.path.substr(0, 128))));
    Run(control::ListNodes{}, std::move(respond), [name](control::Reply& r) {
      if (name.empty()) return Json(200, codec::EncodeNodeList(r.nodes));
      for (const NodeStatus& n : r.nodes) {
        if (n.info.name == name) {
          std::string list = codec::EncodeNodeList({n});
          // {"nodes":[X]} -> X
          return Json(200, list.substr(10, list.size() - 12));
        }
      }
      return Error(NotFound("node " + name + " is not known"));
    });
    return;
  }
  respond(Error(NotFound("no such endpoint: " + req.path.substr(0, 128))));
}

void Service::Submit(const Identity& who, Request& req, Respond respond, bool batch) {
  control::SubmitJobs submit;
  submit.caller = CallerOf(who);
  if (req.idempotency_key.size() > 256) {
    return respond(Error(InvalidArgument("Idempotency-Key: longer than 256 bytes")));
  }
  submit.idempotency_key = req.idempotency_key;
  if (batch) {
    if (req.body.find("\"jobs\"") == std::string::npos) {
      return respond(Error(InvalidArgument("body: must be {\"jobs\": [spec, ...]}")));
    }
    auto specs = codec::DecodeJobSpecs(req.body);
    if (!specs) return respond(Error(specs.error()));
    submit.specs = std::move(*specs);
  } else {
    auto spec = codec::DecodeJobSpec(req.body);
    if (!spec) return respond(Error(spec.error()));
    submit.specs.push_back(std::move(*spec));
  }
  Run(std::move(submit), std::move(respond), [batch](control::Reply& r) {
    int status = r.created ? 201 : 200;
    if (!batch) return Json(status, codec::EncodeJob(r.jobs.at(0)));
    std::vector<const Job*> jobs;
    for (const Job& j : r.jobs) jobs.push_back(&j);
    std::string list = codec::EncodeJobList(jobs, std::nullopt);
    return Json(status, list);
  });
}

void Service::Logs(const Identity& who, const Request& req, int64_t id, Respond respond) {
  auto offset = QueryInt(req, "offset", 0, INT64_MAX, 0);
  auto limit = QueryInt(req, "limit", 1, 16 << 20, 1 << 20);
  if (!offset) return respond(Error(offset.error()));
  if (!limit) return respond(Error(limit.error()));
  bool follow = QueryFlag(req, "follow");
  std::string node;
  if (auto it = req.query.find("node"); it != req.query.end()) node = it->second;
  if (!node.empty() && !IsValidNodeName(node)) {
    return respond(
        Error(InvalidArgument("node: \"" + node.substr(0, 64) + "\" is not a node name")));
  }
  Run(control::GetJob{CallerOf(who), JobId{id}}, std::move(respond),
      [this, who, node, follow, offset = *offset, limit = *limit](control::Reply& r) {
        const Job& job = r.jobs.at(0);
        if (who.role != Role::kAdmin && job.user != who.user) {
          return Error(PermissionDenied("job " + job.id.ToString() + " is " + job.user +
                                        "'s: only " + job.user + " or an admin reads its logs"));
        }
        std::string from = node;
        if (from.empty()) {
          std::vector<std::string> nodes = logs_.Nodes(job.id);
          if (!job.allocation.empty())
            from = job.allocation.front().node;
          else if (!nodes.empty())
            from = nodes.front();
        }
        Response res;
        res.content_type = "text/plain; charset=utf-8";
        res.headers.emplace_back("X-Baton-Job-State", std::string(JobStateName(job.state)));
        if (follow) {
          res.stream = FollowLogs(who, job.id, from, !node.empty(), offset);
          return res;
        }
        if (from.empty()) return res;
        auto chunk = logs_.Read(job.id, from, offset, static_cast<size_t>(limit));
        if (!chunk) return Error(chunk.error());
        res.body = std::move(chunk->data);
        res.headers.emplace_back("X-Baton-Log-Size", std::to_string(chunk->size));
        return res;
      });
}

void Service::ShowJobMetrics(const Identity& who, int64_t id, Respond respond) {
  Run(control::GetJobMetrics{CallerOf(who), JobId{id}}, std::move(respond),
      [](control::Reply& r) { return Json(200, codec::EncodeJobMetrics(*r.job_metrics)); });
}

// POST /v1/tokens {"user", "role", "name"}: a new token, its secret shown this once.
// GET /v1/tokens: the caller's tokens (an admin's: all). POST /v1/tokens/{id}/revoke.
void Service::Tokens(const Identity& who, const Request& req, const std::vector<std::string>& seg,
                     Respond respond) {
  if (seg.size() == 2 && req.method == "POST") {
    auto body = codec::DecodeTokenBody(req.body);
    if (!body) return respond(Error(body.error()));
    auto secret = NewToken();
    if (!secret) return respond(Error(secret.error()));
    control::CreateToken c{.caller = CallerOf(who),
                           .user = body->user.empty() ? who.user : body->user,
                           .role = body->role,
                           .name = body->name,
                           .hash = TokenHash(*secret)};
    Run(std::move(c), std::move(respond), [this, secret = *secret](control::Reply& r) {
      const store::Token& t = r.tokens.at(0);
      tokens_.AddHash(t.hash, Identity{.user = t.user, .role = *ParseRole(t.role)});
      return Json(201, codec::EncodeToken(Info(t, secret)));
    });
    return;
  }
  if (seg.size() == 2 && req.method == "GET") {
    Run(control::ListTokens{CallerOf(who)}, std::move(respond), [](control::Reply& r) {
      std::vector<codec::TokenInfo> list;
      for (const store::Token& t : r.tokens) list.push_back(Info(t));
      return Json(200, codec::EncodeTokenList(list));
    });
    return;
  }
  if (seg.size() == 4 && seg[3] == "revoke" && req.method == "POST") {
    auto id = ParseJobId(seg[2]);
    if (!id) return respond(Error(InvalidArgument("token id: must be a positive integer")));
    Run(control::RevokeToken{CallerOf(who), *id}, std::move(respond), [this](control::Reply& r) {
      const store::Token& t = r.tokens.at(0);
      tokens_.RemoveHash(t.hash);
      return Json(200, codec::EncodeToken(Info(t)));
    });
    return;
  }
  respond(Json(405, codec::EncodeError(InvalidArgument(req.method + " is not allowed on " +
                                                       req.path.substr(0, 128)))));
}

void Service::AgentReport(Request& req, Respond respond) {
  auto report = codec::DecodeReport(req.body);
  if (!report) return respond(Error(report.error()));
  if (!IsValidNodeName(report->node))
    return respond(Error(InvalidArgument("node: not a valid node name")));
  // Logs land before the report reaches the controller: once an exit is acknowledged, the
  // output before it is on disk here.
  for (const LogChunk& c : report->logs) {
    Status st = logs_.Write(c.job, report->node, c.offset, c.data);
    if (!st.ok()) return respond(Error(st));
  }
  report->logs.clear();
  Run(control::AgentReport{std::move(*report)}, std::move(respond),
      [](control::Reply&) { return Json(200, "{}"); });
}

}  // namespace baton::api
