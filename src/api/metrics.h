// GET /metrics: the controller's snapshot in Prometheus' text exposition format (version
// 0.0.4), names per PRODUCT §5. Debian packages no Prometheus client library for C++; the
// format is a few lines of text (docs/architecture.md, "Where we wrote our own").
#pragma once

#include <string>

#include "control/controller_loop.h"
#include "control/metrics.h"

namespace baton::api {

std::string RenderMetrics(const control::MetricsSnapshot& m,
                          const control::ControllerLoop::Stats& loop);

}  // namespace baton::api
