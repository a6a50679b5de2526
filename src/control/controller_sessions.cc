// Tunnels to running jobs (`baton run`, `attach`, `forward`): the controller only checks who may
// open one and to what, and sends the order to the agent of the job's first node; the bytes
// never pass through here (api/relay.h).
#include "control/controller.h"

namespace baton::control {

Reply Controller::Tunnel(const OpenTunnel& c, TimePoint now) {
  std::string name = TaskName(c.id, c.array_index);
  const Job* job = FindJob(c.id, c.array_index);
  if (job == nullptr) return ErrorReply(NotFound("job " + name + " does not exist"));
  if (!c.caller.admin && job->user != c.caller.user)
    return ErrorReply(PermissionDenied("job " + name + " belongs to " + job->user));
  if (job->array_id == job->id && job->array_index < 0 && !job->spec.array.empty())
    return ErrorReply(InvalidArgument("job " + name + " is an array: name one task (12_7)"));
  if (job->state != JobState::kRunning) {
    return ErrorReply(Conflict("job " + name + " is " + std::string(JobStateName(job->state)) +
                               (IsTerminal(job->state) ? "" : ": it is not running yet")));
  }
  if (c.port == 0 && job->spec.interactive.empty()) {
    return ErrorReply(Conflict("job " + name +
                               " has no session to attach to (only jobs started with baton run "
                               "have one; baton logs -f follows any job's output)"));
  }
  const NodeAllocation* first = nullptr;
  for (const NodeAllocation& part : job->allocation) {
    if (!part.ended) {
      first = &part;
      break;
    }
  }
  const NodeRecord* node = first == nullptr ? nullptr : nodes_.Find(first->node);
  if (node == nullptr || node->state != NodeRecord::State::kReady ||
      (c.port == 0 && first != &job->allocation.front())) {
    return ErrorReply(Unavailable("job " + name + "'s node is not connected"));
  }
  Order o;
  o.kind = Order::Kind::kTunnel;
  o.tunnel = TunnelOrder{.id = c.tunnel, .job = job->id, .attempt = job->restarts, .port = c.port};
  SendOrder(first->node, std::move(o));
  Reply r;
  r.jobs.push_back(JobAsShown(*job, now));
  return r;
}

}  // namespace baton::control
