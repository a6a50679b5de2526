// One batch of the controller's protocol, the same for the server's loop, the simulator and the
// tests: apply each command at `now`, a Tick when one is due, end the batch (scheduling, orders
// for the agents), and show the jobs in every reply as the batch left them, the way a GET shows
// them (the running attempt's cost included): a job submitted to an idle GPU is already running
// when its submit is answered. The caller makes `effects.store` durable before it sends any
// reply or delivery.
#pragma once

#include <span>
#include <vector>

#include "control/controller.h"

namespace baton::control {

struct BatchResult {
  std::vector<Reply>
      replies;  // one per command, in order; a poll that waits is parked (PollAnswer)
  Effects effects;
  double end_seconds = 0;  // how long ending the batch took (the scheduling pass), real time
};

struct BatchOptions {
  bool tick = false;  // apply a Tick after the commands: time passed, look at timeouts
};

BatchResult RunBatch(Controller& controller, std::span<const Command> commands, TimePoint now,
                     BatchOptions options = {});

}  // namespace baton::control
