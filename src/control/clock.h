// The controller's clocks: the interface and both implementations live in core/clock.h, so
// that the agent, below control/, uses the same ones.
#pragma once

#include "core/clock.h"

namespace baton::control {

using baton::Clock;
using baton::RealClock;
using baton::SimulatedClock;

}  // namespace baton::control
