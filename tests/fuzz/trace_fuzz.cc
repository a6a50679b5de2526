// Fuzz target: trace files for `baton sim` (the CSV format, Philly, Alibaba pod lists).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto jobs = baton::sim::ParseTrace(text, "fuzz.csv", 10'000);
  if (jobs) {
    for (const auto& j : *jobs) {
      if (j.submit.count() < 0 || j.duration.count() < 0 || j.resources.milli_gpus < 0)
        std::abort();
    }
  }
  return 0;
}
