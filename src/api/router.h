// The route table of the REST API and the node protocol: each route is a method, a path
// pattern with {placeholder} segments, who may use it (docs/api.md, "Routes") and its handler.
// The router answers what no handler needs to: 404 for a path no route has (before any token
// check outside /v1), 401 for a bad token, 405 for a known path with another method, 403 for a
// role the route does not admit.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/auth.h"
#include "api/http.h"

namespace baton::api {

// Which tokens may use a route.
enum class Access {
  kPublic,        // none needed
  kAnyToken,      // any valid token
  kUserOrAdmin,   // the REST API
  kAdmin,         // admin work (drains, fault injections)
  kAgentOrAdmin,  // the node protocol (a node's credential, or an admin)
  kJoinOrAdmin,   // joining as a new node
};

// What a handler gets.
struct Call {
  Request request;
  Identity who;                                             // the token's; empty on public routes
  std::vector<std::pair<std::string, std::string>> params;  // {name} -> its segment
  Respond respond;

  // The segment that matched {name}; the route's pattern has it.
  const std::string& Param(std::string_view name) const;
};

struct Route {
  std::string method;   // "GET", "POST"; "*" for any
  std::string pattern;  // "/v1/jobs/{id}/logs": literal segments and {name} placeholders
  Access access = Access::kUserOrAdmin;
  std::function<void(Call)> handler;
  std::string denied = "";  // the 403 message for a role not admitted ("" = by `access`)
};

class Router {
 public:
  // `tokens` must outlive the router.
  Router(const TokenTable& tokens, std::vector<Route> routes);

  // Finds the route and calls its handler, or answers the error.
  void Dispatch(Request request, Respond respond) const;

 private:
  struct Entry {
    Route route;
    std::vector<std::string> segments;  // of the pattern
  };
  // The routes whose pattern is the most specific match of `segments` (a literal segment beats
  // a placeholder: /v1/jobs/batch is not job "batch"), with their parameters.
  std::vector<std::pair<const Entry*, std::vector<std::pair<std::string, std::string>>>> Match(
      const std::vector<std::string>& segments) const;

  const TokenTable& tokens_;
  std::vector<Entry> entries_;
};

}  // namespace baton::api
