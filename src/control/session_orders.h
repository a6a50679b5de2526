// What the controller sends and says of sessions (`baton run` jobs), as values it acts on:
// the order that opens a tunnel to a running job (`baton run`, `attach`, `forward`, an
// allocation's `run --in`), checked for who may open one and to what; the note that warns an
// idle session in its terminal; and what stopping an idle session frees, with the event that
// says so. The controller only sends the tunnel's order to the agent of the job's first node:
// the bytes never pass through it (api/relay.h). (An interactive pool's limits on sessions at
// submit are admission.h's; the idle clocks are IdleSessions'.)
#pragma once

#include <map>
#include <string>

#include "control/commands.h"
#include "control/idle_sessions.h"
#include "control/node_table.h"
#include "core/event.h"
#include "core/job.h"
#include "core/protocol.h"

namespace baton::control {

// A tunnel's order and the node whose agent it goes to.
struct TunnelTo {
  const Job* job = nullptr;
  std::string node;
  Order order;
};

// The tunnel `c` asks for: to a running job of the caller's (an array's task, not the array),
// to its session, a port of its first node, or (c.step) its allocation's host; or why not
// (NotFound, InvalidArgument, Conflict, or Unavailable when the node is not connected).
Result<TunnelTo> TunnelFor(const OpenTunnel& c, const std::map<JobId, Job>& jobs,
                           const NodeTable& nodes);

// The note an idle session's terminal gets, warned by verdict `v` (kWarn).
Order IdleWarning(const IdleSessions::Verdict& v);

// An idle session stopped: why (its reason_detail after "cancelled: "), its GPU-seconds of the
// rest of its time limit freed, and the session_reclaimed event.
struct Reclaimed {
  std::string why;
  double gpu_seconds = 0;
  ClusterEvent event;
};
Reclaimed ReclaimedSession(const Job& job, const PoolPolicy& pool, Duration idle_for,
                           TimePoint now);

}  // namespace baton::control
