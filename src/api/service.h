// The REST API (PRODUCT.md §3) and the agent protocol (/v1/agent/...): a route table
// (api/router.h) whose handlers turn requests into controller commands and encode the replies.
// Decoding and encoding run on the HTTP threads; only commands reach the controller's thread.
// Streams (followed logs, Server-Sent Events) wait on fanouts (api/fanout.h), not on timers.
#pragma once

#include <functional>
#include <string>

#include "api/auth.h"
#include "api/code_store.h"
#include "api/fanout.h"
#include "api/http.h"
#include "api/log_store.h"
#include "api/placement_book.h"
#include "api/relay.h"
#include "api/router.h"
#include "control/controller_loop.h"

namespace baton::api {

// The most bytes of metrics lines one GET /v1/jobs/{id}/metrics/lines answers.
inline constexpr size_t kMetricsLinesBytes = 4 << 20;

// Maps a status code to its HTTP status.
int HttpStatus(Code code);

// What streams wait for. main feeds both from the controller loop's hooks.
struct News {
  Fanout events;  // a cluster event is durable (LoopOptions::on_event)
  // By job id: a batch that changed the job is durable (on_commit), or its log bytes landed.
  Fanout jobs;
};

class Service {
 public:
  using PostToIo = std::function<void(std::function<void()>)>;
  struct Deps {  // all must outlive the service
    control::ControllerLoop& loop;
    const TokenTable& tokens;
    LogStore& logs;
    News& news;
    PostToIo post_to_io;        // runs work on an HTTP thread
    CodeStore* code = nullptr;  // code snapshots; none: POST /v1/code is refused
    int64_t epoch = 0;          // the lease's (several controllers), stamped on every order
    std::string reports_dir;    // GET /v1/reports lists its folders; "" none
    // The jobs placed on each node, fed by the loop's commits: a node's report writes output
    // only for its own jobs, and a node fetches only its jobs' code. None: not checked (tests
    // of the API alone).
    const PlacementBook* placements = nullptr;
  };
  explicit Service(Deps deps);

  void Handle(Request request, Respond respond);

 private:
  std::vector<Route> Routes();
  // Handlers, one per route or family of routes (service.cc, service_jobs.cc).
  void OpenApi(Call c);
  void Metrics(Call c);
  void AgentJoin(Call c);
  void RevokeNode(Call c);
  void AgentRegister(Call c);
  void AgentOrders(Call c);
  void AgentReport(Call c);
  void SubmitOne(Call c);
  void SubmitBatch(Call c);
  void Submit(Call c, bool batch);
  void ListJobs(Call c);
  void ShowJob(Call c);
  void JobAction(Call c, control::JobAction::Kind kind);
  void UpdateJob(Call c);  // PATCH /v1/jobs/{id}
  void Resubmit(Call c);
  void Logs(Call c);
  void MetricsLines(Call c);
  Result<std::string> LogSource(const Job& job, const Identity& who, const std::string& node) const;
  void ShowJobMetrics(Call c);
  // The dashboard's files (ui.cc) and the reports of `baton sim --report` under DATA/reports.
  void UiFile(Call c);
  void ListReports(Call c);
  void ReportFile(Call c);
  void ListCrons(Call c);
  void DeleteCron(Call c);
  void Queue(Call c);
  void ListNodes(Call c);
  void ShowNode(Call c);
  void Drain(Call c, bool drain);
  void Inject(Call c);
  void Events(Call c);
  void Usage(Call c);
  void CreateToken(Call c);
  void ListTokens(Call c);
  void RevokeToken(Call c);
  // Tunnels (tunnels.cc): a client's end to a job's session, a port of it (?port=N) or its
  // allocation's host; an agent's end.
  enum class TunnelTo { kSession, kPort, kStep };
  void OpenTunnel(Call c, TunnelTo to);
  void AgentTunnel(Call c);
  // Code snapshots (tunnels.cc): upload, and an agent's download.
  void PutCode(Call c);
  void GetCode(Call c);
  // GET /v1/jobs/{id}/logs?follow=1 and GET /v1/events as Server-Sent Events (streams.cc).
  Pull FollowLogs(const Identity& who, JobId job, std::string node, bool node_given,
                  int64_t offset);
  void EventStream(Call c);
  // GET /v1/jobs/{id}/preemption?timeout=SECONDS: answered once the job is being preempted, has
  // stopped running, or the timeout passed (streams.cc).
  void Preemption(Call c);
  // GET /v1/jobs/{id}/wait?timeout=SECONDS: answered once the job has ended (an array's id:
  // every task of the array), or the timeout passed (streams.cc).
  void WaitEnd(Call c);
  // Posts `command` (a C); `on_answer` gets its control::Answered<C> (whatever its status) on
  // an HTTP thread.
  template <typename C, typename OnAnswer>
  void Ask(C command, OnAnswer on_answer) {
    Post(std::move(command), [on_answer = std::move(on_answer)](control::Reply& reply) mutable {
      control::Answered<C> answered(std::move(reply));
      on_answer(answered);
    });
  }
  // Posts `command` (a C); its answer (control::AnswerOf<C>) is turned into a response by
  // `encode` on an HTTP thread; a refusal is answered with its error.
  template <typename C, typename Encode>
  void Run(C command, Respond respond, Encode encode) {
    Encoded(std::move(command), std::move(respond),
            [encode = std::move(encode)](control::Reply& reply) mutable {
              return encode(std::get<control::AnswerOf<C>>(reply.value));
            });
  }
  void Post(control::Command command, std::function<void(control::Reply&)> on_reply);
  // Posts `command`; a reply that is ok is turned into the response by `encode`, a refusal
  // into its error.
  void Encoded(control::Command command, Respond respond,
               std::function<Response(control::Reply&)> encode);

  control::ControllerLoop& loop_;
  LogStore& logs_;
  News& news_;
  PostToIo post_to_io_;
  CodeStore* code_;
  const PlacementBook* placements_;
  int64_t epoch_;
  std::string reports_dir_;
  RelayHub relays_;
  Router router_;
};

}  // namespace baton::api
