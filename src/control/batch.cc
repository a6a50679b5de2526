#include "control/batch.h"

#include <chrono>
#include <variant>

#include "core/overloaded.h"

namespace baton::control {

BatchResult RunBatch(Controller& controller, std::span<const Command> commands, TimePoint now,
                     BatchOptions options) {
  BatchResult result;
  result.replies.reserve(commands.size());
  for (const Command& command : commands) result.replies.push_back(controller.Apply(command, now));
  if (options.tick) (void)controller.Apply(Tick{}, now);
  // Timed for the scheduling-cycle histogram only; nothing the controller decides reads it.
  auto start = std::chrono::steady_clock::now();
  result.effects = controller.EndBatch(now);
  result.end_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (Reply& reply : result.replies) {
    std::visit(Overloaded{[&](Submitted& r) { controller.ShowAsNow(r.jobs, now); },
                          [&](JobShown& r) { controller.ShowAsNow(r.job, now); },
                          [&](JobDetail& r) { controller.ShowAsNow(r.job, now); },
                          [&](JobPage& r) { controller.ShowAsNow(r.jobs, now); },
                          [&](QueuePage& r) { controller.ShowAsNow(r.jobs, now); }, [](auto&) {}},
               reply.value);
  }
  return result;
}

}  // namespace baton::control
