// The tunnel routes of api::Service, and the code snapshots' (POST /v1/code, GET /v1/code/{id}): a
// client's end (GET /v1/jobs/{id}/attach, a session; GET /v1/jobs/{id}/forward?port=N, a port of
// the job's first node; GET /v1/jobs/{id}/step, an allocation's host) and its agent's end (GET
// /v1/agent/tunnels/{tunnel}). Each is an upgraded connection (Upgrade: baton-tunnel) that the
// RelayHub pairs with the other; see api/relay.h.
#include "api/auth.h"
#include "api/service.h"
#include "api/service_internal.h"

namespace baton::api {

using namespace internal;

namespace {

constexpr std::string_view kProtocol = "baton-tunnel";

Status NeedsUpgrade(const Request& req) {
  if (req.upgrade == kProtocol) return Status::Ok();
  return InvalidArgument(
      "this route needs an upgraded connection (Connection: Upgrade, Upgrade: baton-tunnel); "
      "baton run, baton attach and baton forward open one");
}

}  // namespace

void Service::OpenTunnel(Call c, TunnelTo to) {
  if (Status st = NeedsUpgrade(c.request); !st.ok()) return c.respond(Error(st));
  auto ref = JobIdParam(c);
  if (!ref) return c.respond(Error(ref.error()));
  int64_t port = 0;
  if (to == TunnelTo::kPort) {
    auto p = QueryInt(c.request, "port", 1, 65535, 0);
    if (!p) return c.respond(Error(p.error()));
    if (*p == 0) return c.respond(Error(InvalidArgument("port: missing (the job's TCP port)")));
    port = *p;
  }
  auto id = NewToken();
  if (!id) return c.respond(Error(id.error()));
  std::string tunnel = id->substr(0, 32);
  relays_.Expect(tunnel);
  control::OpenTunnel open{.caller = CallerOf(c.who),
                           .id = ref->id,
                           .array_index = ref->array_index,
                           .tunnel = tunnel,
                           .port = static_cast<int>(port),
                           .step = to == TunnelTo::kStep};
  Run(std::move(open), std::move(c.respond), [this, tunnel](control::JobShown&) {
    return Response{.status = 101,
                    .headers = {{"Upgrade", std::string(kProtocol)}},
                    .upgrade = [this, tunnel](int fd, std::string early) {
                      relays_.Offer(tunnel, fd, std::move(early));
                    }};
  });
}

void Service::AgentTunnel(Call c) {
  if (Status st = NeedsUpgrade(c.request); !st.ok()) return c.respond(Error(st));
  std::string tunnel = c.Param("tunnel");
  if (!relays_.Expects(tunnel)) {
    return c.respond(Error(
        NotFound("tunnel " + tunnel.substr(0, 40) + " is not open (its client gave up waiting)")));
  }
  c.respond(Response{.status = 101,
                     .headers = {{"Upgrade", std::string(kProtocol)}},
                     .upgrade = [this, tunnel](int fd, std::string early) {
                       relays_.Offer(tunnel, fd, std::move(early));
                     }});
}

void Service::PutCode(Call c) {
  if (code_ == nullptr) return c.respond(Error(Unavailable("code snapshots are not kept here")));
  auto id = code_->Put(c.request.body, c.who.user,
                       std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
  if (!id) return c.respond(Error(id.error()));
  c.respond(Json(
      201, "{\"code\":\"" + *id + "\",\"bytes\":" + std::to_string(c.request.body.size()) + "}"));
}

void Service::GetCode(Call c) {
  if (code_ == nullptr) return c.respond(Error(NotFound("code snapshots are not kept here")));
  // A node fetches only the code of a job placed on it.
  if (placements_ != nullptr && c.who.role == Role::kAgent &&
      !placements_->HasCode(c.Param("id"), c.who.user)) {
    return c.respond(
        Error(PermissionDenied("node " + c.who.user + " runs no job with the code snapshot " +
                               c.Param("id").substr(0, 64))));
  }
  auto archive = code_->Get(c.Param("id"));
  if (!archive) return c.respond(Error(archive.error()));
  c.respond(
      Response{.status = 200, .body = std::move(*archive), .content_type = "application/gzip"});
}

}  // namespace baton::api
