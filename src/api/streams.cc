// The streamed routes of api::Service: a followed log (GET /v1/jobs/{id}/logs?follow=1) and the
// event stream (GET /v1/events as Server-Sent Events). Neither polls: with nothing new, a stream
// waits on a fanout (api/fanout.h) until there is news: log bytes landed or a batch that changed
// jobs is durable (News::jobs), a cluster event is durable (News::events). A followed log ends
// once the job has ended and its last bytes are sent; an event stream ends only when the client
// goes (or the server stops).
#include <chrono>
#include <memory>

#include "api/service.h"
#include "api/service_internal.h"
#include "codec/json_codec.h"

namespace baton::api {

using namespace internal;

namespace {

// Every change a follower waits for is notified (AgentReport notifies new log bytes, the loop's
// on_commit every durable change of a job), so this only bounds how long a notification that
// went missing through a bug would leave a follower behind.
constexpr std::chrono::milliseconds kSafetyNet = std::chrono::seconds(5);
// An idle event stream sends a comment this often, so that proxies keep it open.
constexpr std::chrono::milliseconds kKeepAlive = std::chrono::seconds(15);
constexpr size_t kPieceBytes = 256 * 1024;

struct LogFollow {
  LogFollow(Fanout& jobs, control::Caller c, JobId j, std::string n, bool given, int64_t o)
      : caller(std::move(c)),
        job(j),
        node(std::move(n)),
        node_given(given),
        offset(o),
        waiter(jobs, j.value) {}

  control::Caller caller;
  JobId job;
  std::string node;         // the node whose log is followed; empty until the job has one
  bool node_given = false;  // ?node=: that node's log, whatever the job does
  int64_t offset = 0;
  bool last = false;  // the job has ended: what is on disk is all there is
  Waiter waiter;
};

struct PreemptionWait {
  PreemptionWait(Fanout& jobs, control::Caller c, JobId j, std::chrono::steady_clock::time_point u)
      : caller(std::move(c)), job(j), until(u), waiter(jobs, j.value) {}

  control::Caller caller;
  JobId job;
  std::chrono::steady_clock::time_point until;
  bool answered = false;
  Waiter waiter;
};

struct EndWait {
  EndWait(Fanout& jobs, control::Caller c, JobId j, bool a, std::chrono::steady_clock::time_point u)
      : caller(std::move(c)), job(j), array(a), from(j.value), until(u), waiter(jobs, j.value) {}

  control::Caller caller;
  JobId job;     // the job, or the array's id (its first task's)
  bool array;    // every task of the array
  int64_t from;  // an array: no task before this one is still going
  std::chrono::steady_clock::time_point until;
  bool answered = false;
  Waiter waiter;
};

struct EventFeed {
  EventFeed(Fanout& events, int64_t from) : after(from), waiter(events) {}

  int64_t after = 0;
  std::chrono::steady_clock::time_point last_sent = std::chrono::steady_clock::now();
  Waiter waiter;
};

// Nothing new: ask again after `wait` at the latest, sooner when `waiter` hears news.
template <typename State>
Piece WaitForNews(std::shared_ptr<State> state, std::chrono::milliseconds wait) {
  return Piece{
      .wait = std::max(wait, std::chrono::milliseconds(1)),
      .on_wake = [state](std::function<void()> wake) { state->waiter.Arm(std::move(wake)); }};
}

}  // namespace

Pull Service::FollowLogs(const Identity& who, JobId job, std::string node, bool node_given,
                         int64_t offset) {
  auto f = std::make_shared<LogFollow>(news_.jobs, CallerOf(who), job, std::move(node), node_given,
                                       offset);
  return [this, f](PieceCallback give) {
    f->waiter.Look();  // news from here on wakes the wait below
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
    Ask(control::GetJob{f->caller, f->job}, [f, give](control::Answered<control::GetJob>& r) {
      if (!r.status.ok()) return give(Piece{.end = true});
      const Job& job = r->job;
      // A requeued job that starts again elsewhere: its new node's log, from the start.
      if (!f->node_given && !job.allocation.empty() && job.allocation.front().node != f->node) {
        f->node = job.allocation.front().node;
        f->offset = 0;
        return give(Piece{});  // read at once
      }
      if (IsTerminal(job.state)) {
        f->last = true;
        return give(Piece{});  // read once more, at once
      }
      give(WaitForNews(f, kSafetyNet));
    });
  };
}

// Determined's preemption long-poll: {"job", "state", "preempting", "deadline", "reason"} once
// the job's attempt is being preempted (by the scheduler, or its spot node's reclaim notice;
// `deadline` is its SIGKILL's time), is no longer running, or `timeout` seconds (default 60, at
// most 600) passed with it running undisturbed. Streamed (chunked) so that the wait holds no
// thread: the answer is the one JSON object the stream ends with.
void Service::Preemption(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  auto timeout = QueryInt(c.request, "timeout", 0, 600, 60);
  if (!timeout) return c.respond(Error(timeout.error()));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout);
  Run(control::GetJob{CallerOf(c.who), id->id, id->array_index}, std::move(c.respond),
      [this, who = c.who, until](control::JobDetail& first) {
        // Waits on the job's own news: an array's task is known by its id only from here.
        auto w = std::make_shared<PreemptionWait>(news_.jobs, CallerOf(who), first.job.id, until);
        Response res;
        res.content_type = "application/json";
        res.stream = [this, w](PieceCallback give) {
          if (w->answered) return give(Piece{.end = true});
          w->waiter.Look();
          Ask(control::GetJob{w->caller, w->job}, [w, give](control::Answered<control::GetJob>& r) {
            auto now = std::chrono::steady_clock::now();
            if (r.status.ok() && r->job.state == JobState::kRunning && !r->job.preempt_deadline &&
                now < w->until) {
              auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w->until - now);
              return give(WaitForNews(w, std::min(left, kSafetyNet)));
            }
            w->answered = true;
            if (!r.status.ok()) return give(Piece{.data = codec::EncodeError(r.status)});
            give(Piece{.data = codec::EncodePreemption(r->job)});
          });
        };
        return res;
      });
}

// `baton wait`'s long-poll: {"job", "array", "ended"} once the job has ended (for an array's
// id: every one of its tasks), or `timeout` seconds (default 60, at most 600) passed. Streamed
// as the preemption's, so that the wait holds no thread. An array's waiter hears each task that
// ends (main notifies the array's id then) and looks past the tasks ended so far, so a wait of
// N tasks asks the controller about each task about once.
void Service::WaitEnd(Call c) {
  auto id = JobIdParam(c);
  if (!id) return c.respond(Error(id.error()));
  auto timeout = QueryInt(c.request, "timeout", 0, 600, 60);
  if (!timeout) return c.respond(Error(timeout.error()));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout);
  const bool task = id->array_index >= 0;
  Run(control::GetJob{CallerOf(c.who), id->id, id->array_index}, std::move(c.respond),
      [this, who = c.who, until, task](control::JobDetail& first) {
        const bool array = !task && first.job.array_id == first.job.id;
        auto w = std::make_shared<EndWait>(news_.jobs, CallerOf(who), first.job.id, array, until);
        Response res;
        res.content_type = "application/json";
        res.stream = [this, w](PieceCallback give) {
          if (w->answered) return give(Piece{.end = true});
          w->waiter.Look();
          // Ended (or the timeout passed): the answer; else a wait for the job's news.
          auto settle = [w, give](bool ended) {
            auto now = std::chrono::steady_clock::now();
            if (!ended && now < w->until) {
              auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w->until - now);
              return give(WaitForNews(w, std::min(left, kSafetyNet)));
            }
            w->answered = true;
            give(Piece{.data = "{\"job\":" + std::to_string(w->job.value) +
                               ",\"array\":" + (w->array ? "true" : "false") +
                               ",\"ended\":" + (ended ? "true" : "false") + "}"});
          };
          if (!w->array) {
            return Ask(control::GetJob{w->caller, w->job},
                       [w, give, settle](control::Answered<control::GetJob>& r) {
                         if (!r.status.ok()) {
                           w->answered = true;
                           return give(Piece{.data = codec::EncodeError(r.status)});
                         }
                         settle(IsTerminal(r->job.state));
                       });
          }
          Ask(control::ListJobs{.caller = w->caller,
                                .states = {JobState::kPending, JobState::kHeld, JobState::kRunning},
                                .array = w->job.value,
                                .limit = 1,
                                .after = w->from - 1},
              [w, settle](control::Answered<control::ListJobs>& r) {
                if (r.status.ok() && !r->jobs.empty()) w->from = r->jobs.front().id.value;
                settle(r.status.ok() && r->jobs.empty());
              });
        };
        return res;
      });
}

// text/event-stream: "id: SEQ", "event: KIND", "data: EVENT-JSON" per event; a client that
// reconnects with Last-Event-ID (or ?after=SEQ) gets what it missed, as far as the ring reaches.
void Service::EventStream(Call c) {
  auto after = QueryInt(c.request, "after", 0, INT64_MAX, 0);
  if (!after) return c.respond(Error(after.error()));
  int64_t from = *after;
  if (!c.request.last_event_id.empty()) {
    auto last = BoundedInt("Last-Event-ID", c.request.last_event_id, 0, INT64_MAX);
    if (!last) return c.respond(Error(last.error()));
    from = *last;
  }
  auto feed = std::make_shared<EventFeed>(news_.events, from);
  Response res;
  res.content_type = "text/event-stream";
  res.headers.emplace_back("X-Accel-Buffering", "no");  // nginx in front: do not buffer
  res.stream = [this, feed](PieceCallback give) {
    feed->waiter.Look();
    Ask(control::GetEvents{.after = feed->after, .limit = 1000},
        [feed, give](control::Answered<control::GetEvents>& r) {
          if (!r.status.ok()) return give(Piece{.end = true});
          auto now = std::chrono::steady_clock::now();
          if (r->events.empty()) {
            auto idle =
                std::chrono::duration_cast<std::chrono::milliseconds>(now - feed->last_sent);
            if (idle < kKeepAlive) return give(WaitForNews(feed, kKeepAlive - idle));
            feed->last_sent = now;
            return give(Piece{.data = ": keep-alive\n\n"});
          }
          std::string out;
          for (const ClusterEvent& e : r->events) {
            out += "id: " + std::to_string(e.seq) +
                   "\nevent: " + std::string(EventKindName(e.kind)) +
                   "\ndata: " + codec::EncodeEvent(e) + "\n\n";
            feed->after = e.seq;
          }
          feed->last_sent = now;
          give(Piece{.data = std::move(out)});
        });
  };
  c.respond(std::move(res));
}

}  // namespace baton::api
