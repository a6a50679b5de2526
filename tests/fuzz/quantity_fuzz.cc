// Fuzz target: the small text parsers behind flags and spec fields: durations, sizes,
// GPU counts, GPU specs, RFC 3339 times, priorities, states and cron schedules. Accepted values
// are in bounds; an accepted schedule always comes again, later than asked.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/cron.h"
#include "core/job.h"
#include "core/node.h"
#include "core/quantity.h"
#include "core/time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto d = baton::ParseDuration(text, "f"); d && (d->count() < 0 || *d > baton::kMaxDuration))
    std::abort();
  if (auto s = baton::ParseSize(text, "f"); s && *s < 0) std::abort();
  if (auto m = baton::ParseMilli(text, "f", 8000); m && (*m < 0 || *m > 8000)) std::abort();
  if (auto g = baton::ParseGpuSpec(text); g && (g->count < 0 || g->count > 1024)) std::abort();
  (void)baton::ParseRfc3339(text);
  (void)baton::ParsePriority(text);
  (void)baton::ParseJobState(text);
  (void)baton::IsValidNodeName(text);
  if (auto cron = baton::ParseCron(text, "f")) {
    const baton::TimePoint after = baton::FromMillis(1'790'000'000'000);
    auto next = baton::NextCronTime(*cron, after, baton::CronZone::kUtc);
    if (!next || *next <= after) std::abort();
  }
  return 0;
}
