// What an agent's event of a running job records on the job itself, apart from its runs'
// starts and ends (controller_agents.cc): a value of its tracked metric, a checkpoint.
#pragma once

#include "core/job.h"
#include "core/protocol.h"

namespace baton::control {

// A value of the job's tracked metric (spec.best_metric): its last, and its best if better
// (spec.best_max: higher is better). Whether the job changed (not when it tracks none).
// A value dated after `now` counts as of `now`.
bool NoteMetric(Job& job, const JobEvent& e, TimePoint now);

// A checkpoint the job wrote: what preemption would lose is counted from here on.
void NoteCheckpoint(Job& job, const JobEvent& e, TimePoint now);

}  // namespace baton::control
