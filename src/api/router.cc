#include "api/router.h"

#include <cstdlib>

#include "codec/json_codec.h"

namespace baton::api {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

bool IsPlaceholder(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

std::vector<std::string> PatternSegments(const std::string& pattern) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < pattern.size()) {
    size_t j = pattern.find('/', i);
    if (j == std::string::npos) j = pattern.size();
    if (j > i) out.push_back(pattern.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

Response ErrorResponse(int status, const Status& st) {
  return Response{.status = status, .body = codec::EncodeError(st)};
}

bool Admits(Access access, Role role) {
  switch (access) {
    case Access::kPublic:
      return true;
    case Access::kAnyToken:
      return role != Role::kJoin;
    case Access::kUserOrAdmin:
      return role == Role::kUser || role == Role::kAdmin;
    case Access::kAdmin:
      return role == Role::kAdmin;
    case Access::kAgentOrAdmin:
      return role == Role::kAgent || role == Role::kAdmin;
    case Access::kJoinOrAdmin:
      return role == Role::kJoin || role == Role::kAdmin;
  }
  return false;
}

std::string DeniedMessage(const Route& route, Role role) {
  if (!route.denied.empty()) return route.denied;
  if (role == Role::kAgent) return "an agent token is for the node protocol only";
  if (role == Role::kJoin) {
    return "a join token is only for joining as a new node (baton agent --token); the node's "
           "agent then uses the credential it is given";
  }
  if (route.access == Access::kAgentOrAdmin) return "the node protocol needs an agent token";
  return route.method + " " + route.pattern + " needs an admin token";
}

}  // namespace

const std::string& Call::Param(std::string_view name) const {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  std::abort();  // a handler asked for a placeholder its route's pattern does not have: a bug
}

Router::Router(const TokenTable& tokens, std::vector<Route> routes) : tokens_(tokens) {
  for (Route& r : routes) {
    std::vector<std::string> segments = PatternSegments(r.pattern);
    entries_.push_back(Entry{.route = std::move(r), .segments = std::move(segments)});
  }
}

std::vector<std::pair<const Router::Entry*, Params>> Router::Match(
    const std::vector<std::string>& segments) const {
  std::vector<std::pair<const Entry*, Params>> best;
  std::vector<bool> best_literal;  // which segments of the best matches are literal
  for (const Entry& e : entries_) {
    if (e.segments.size() != segments.size()) continue;
    Params params;
    std::vector<bool> literal;
    bool ok = true;
    for (size_t i = 0; ok && i < segments.size(); ++i) {
      bool placeholder = IsPlaceholder(e.segments[i]);
      literal.push_back(!placeholder);
      if (placeholder) {
        params.emplace_back(e.segments[i].substr(1, e.segments[i].size() - 2), segments[i]);
      } else {
        ok = e.segments[i] == segments[i];
      }
    }
    if (!ok) continue;
    if (!best.empty() && literal < best_literal) continue;
    if (!best.empty() && best_literal < literal) best.clear();
    best_literal = std::move(literal);
    best.emplace_back(&e, std::move(params));
  }
  return best;
}

void Router::Dispatch(Request req, Respond respond) const {
  auto matches = Match(req.segments);
  const std::string path = req.path.substr(0, 128);
  bool under_v1 = !req.segments.empty() && req.segments[0] == "v1";
  bool needs_token = matches.empty() ? under_v1 : matches[0].first->route.access != Access::kPublic;
  Identity who;
  if (needs_token) {
    auto id = tokens_.Authenticate(req.authorization);
    if (!id) {
      Response r = ErrorResponse(401, id.error());
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return respond(std::move(r));
    }
    who = std::move(*id);
  }
  if (matches.empty()) return respond(ErrorResponse(404, NotFound("no such endpoint: " + path)));
  for (auto& [entry, params] : matches) {
    const Route& route = entry->route;
    if (route.method != "*" && route.method != req.method) continue;
    if (!Admits(route.access, who.role) && needs_token) {
      return respond(ErrorResponse(403, PermissionDenied(DeniedMessage(route, who.role))));
    }
    return route.handler(Call{.request = std::move(req),
                              .who = std::move(who),
                              .params = std::move(params),
                              .respond = std::move(respond)});
  }
  respond(ErrorResponse(405, InvalidArgument(req.method + " is not allowed on " + path)));
}

}  // namespace baton::api
