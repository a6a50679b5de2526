// One scheduling pass, as a pure function: (cluster, pending and running jobs, usage, policy,
// now) -> starts, preemptions, reservations and a reason for every job that waits.
//
// A full pass:
//   1. orders the queue by score = sum of weight x factor (priority class, fair share, age,
//      size), ties by submit order;
//   2. walks it once: a job over a quota or limit waits ("quota"); a job that fits now —
//      without touching GPUs reserved for a job ahead that it would still hold then — starts
//      (backfill); the first `policy.reservations` jobs that do not fit get a reservation:
//      the earliest time and GPUs at which they fit as running jobs end (time limits);
//   3. for a job that waits beyond the preemption grace, looks for victims: running jobs of
//      a lower priority class, or of projects borrowing beyond their guarantee while this
//      job's project is under its own; the set chosen loses the least GPU-time since each
//      victim's last checkpoint.
// An incremental pass (full = false) places only the given new arrivals against the
// reservations already in the view: no new reservations, no preemption.
// Cost: one sort of the queue; each job looks at the nodes of the buckets that can hold it;
// reservations and preemption searches are bounded per pass.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/policy.h"
#include "sched/cluster_view.h"
#include "sched/fair_share.h"
#include "sched/ordering.h"
#include "sched/pass.h"

namespace baton::sched {

PassResult RunPass(PassInput in);
// The same, leaving `in.view` changed (it is the pass's scratch): a caller that runs passes
// often keeps one view and copies into it, which reuses its buffers.
PassResult RunPassOn(PassInput& in);

// Marks `allocation` reserved from `from` for a waiting job (GPUs, and host CPUs/memory when
// it asks for them).
void MarkReservation(ClusterView& view, const Reservation& r);

}  // namespace baton::sched
