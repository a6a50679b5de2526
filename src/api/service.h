// The REST API (PRODUCT.md §3) and the agent protocol (/v1/agent/...): authenticates each
// request, turns it into a controller command, and encodes the reply. Decoding and encoding
// run on the HTTP threads; only commands reach the controller's thread.
#pragma once

#include <functional>
#include <string>

#include "api/auth.h"
#include "api/http.h"
#include "api/log_store.h"
#include "control/controller_loop.h"

namespace baton::api {

// Maps a status code to its HTTP status.
int HttpStatus(Code code);

class Service {
 public:
  using PostToIo = std::function<void(std::function<void()>)>;
  // All references must outlive the service. `post_to_io` runs work on an HTTP thread.
  Service(control::ControllerLoop& loop, TokenRegistry& tokens, LogStore& logs,
          PostToIo post_to_io);

  void Handle(Request request, Respond respond);

 private:
  void Submit(const Identity& who, Request& req, Respond respond, bool batch);
  void Logs(const Identity& who, const Request& req, int64_t id, Respond respond);
  // GET /v1/jobs/{id}/logs?follow=1 and GET /v1/events as Server-Sent Events (streams.cc).
  Pull FollowLogs(const Identity& who, JobId job, std::string node, bool node_given,
                  int64_t offset);
  void EventStream(const Request& req, Respond respond);
  void ShowJobMetrics(const Identity& who, int64_t id, Respond respond);
  void AgentReport(Request& req, Respond respond);
  void Tokens(const Identity& who, const Request& req, const std::vector<std::string>& seg,
              Respond respond);
  // Posts `command`; `on_reply` gets the reply (whatever its status) on an HTTP thread.
  void Ask(control::Command command, std::function<void(control::Reply&)> on_reply);
  // Posts `command`; the reply is turned into a response by `encode` on an HTTP thread.
  void Run(control::Command command, Respond respond,
           std::function<Response(control::Reply&)> encode);

  control::ControllerLoop& loop_;
  TokenRegistry& tokens_;
  LogStore& logs_;
  PostToIo post_to_io_;
};

}  // namespace baton::api
