// The streamed routes of api::Service: a followed log (GET /v1/jobs/{id}/logs?follow=1) and the
// event stream (GET /v1/events as Server-Sent Events). Both poll: the log file and the job's
// state, or the controller's event ring, four times a second while there is nothing new. A
// followed log ends once the job has ended and its last bytes are sent; an event stream ends
// only when the client goes (or the server stops).
#include <chrono>

#include "api/service.h"
#include "api/service_internal.h"
#include "codec/json_codec.h"

namespace baton::api {

using namespace internal;

namespace {

constexpr std::chrono::milliseconds kIdlePoll{250};
constexpr auto kKeepAlive = std::chrono::seconds(15);
constexpr size_t kPieceBytes = 256 * 1024;

struct LogFollow {
  control::Caller caller;
  JobId job;
  std::string node;         // the node whose log is followed; empty until the job has one
  bool node_given = false;  // ?node=: that node's log, whatever the job does
  int64_t offset = 0;
  bool last = false;  // the job has ended: what is on disk is all there is
};

struct EventFeed {
  int64_t after = 0;
  std::chrono::steady_clock::time_point last_sent = std::chrono::steady_clock::now();
};

}  // namespace

Pull Service::FollowLogs(const Identity& who, JobId job, std::string node, bool node_given,
                         int64_t offset) {
  auto f = std::make_shared<LogFollow>(LogFollow{.caller = CallerOf(who),
                                                 .job = job,
                                                 .node = std::move(node),
                                                 .node_given = node_given,
                                                 .offset = offset});
  return [this, f](PieceCallback give) {
    if (!f->node.empty()) {
      auto chunk = logs_.Read(f->job, f->node, f->offset, kPieceBytes);
      if (!chunk)
        return give(Piece{.data = "\nbaton: " + chunk.error().message() + "\n", .end = true});
      if (!chunk->data.empty()) {
        f->offset += static_cast<int64_t>(chunk->data.size());
        return give(Piece{.data = std::move(chunk->data)});
      }
    }
    if (f->last) return give(Piece{.end = true});
    // Nothing new: has the job ended (its output is then all on disk: agents ship the last
    // bytes before they report the exit), or started somewhere?
    Ask(control::GetJob{f->caller, f->job}, [f, give](control::Reply& r) {
      if (!r.status.ok()) return give(Piece{.end = true});
      const Job& job = r.jobs.at(0);
      // A requeued job that starts again elsewhere: its new node's log, from the start.
      if (!f->node_given && !job.allocation.empty() && job.allocation.front().node != f->node) {
        f->node = job.allocation.front().node;
        f->offset = 0;
      }
      if (IsTerminal(job.state)) {
        f->last = true;
        return give(Piece{});  // read once more, at once
      }
      give(Piece{.wait = kIdlePoll});
    });
  };
}

// text/event-stream: "id: SEQ", "event: KIND", "data: EVENT-JSON" per event; a client that
// reconnects with Last-Event-ID (or ?after=SEQ) gets what it missed, as far as the ring reaches.
void Service::EventStream(const Request& req, Respond respond) {
  auto after = QueryInt(req, "after", 0, INT64_MAX, 0);
  if (!after) return respond(Error(after.error()));
  int64_t from = *after;
  if (!req.last_event_id.empty()) {
    auto last = BoundedInt("Last-Event-ID", req.last_event_id, 0, INT64_MAX);
    if (!last) return respond(Error(last.error()));
    from = *last;
  }
  auto feed = std::make_shared<EventFeed>(EventFeed{.after = from});
  Response res;
  res.content_type = "text/event-stream";
  res.headers.emplace_back("X-Accel-Buffering", "no");  // nginx in front: do not buffer
  res.stream = [this, feed](PieceCallback give) {
    Ask(control::GetEvents{.after = feed->after, .limit = 1000}, [feed, give](control::Reply& r) {
      if (!r.status.ok()) return give(Piece{.end = true});
      auto now = std::chrono::steady_clock::now();
      if (r.events.empty()) {
        if (now - feed->last_sent < kKeepAlive) return give(Piece{.wait = kIdlePoll});
        feed->last_sent = now;
        return give(Piece{.data = ": keep-alive\n\n"});
      }
      std::string out;
      for (const ClusterEvent& e : r.events) {
        out += "id: " + std::to_string(e.seq) + "\nevent: " + e.kind +
               "\ndata: " + codec::EncodeEvent(e) + "\n\n";
        feed->after = e.seq;
      }
      feed->last_sent = now;
      give(Piece{.data = std::move(out)});
    });
  };
  respond(std::move(res));
}

}  // namespace baton::api
