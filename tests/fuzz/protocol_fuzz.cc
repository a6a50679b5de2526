// Fuzz target: what agents send the controller (register, report) and what the controller
// sends agents (orders), job records as the store keeps them, and a job's metrics lines as
// GET /v1/jobs/{id}/metrics/lines parses them, an autoscaling provider's answers, and
// GET /v1/usage's answer as `baton usage` reads it.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "codec/json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)baton::codec::DecodeRegister(text);
  (void)baton::codec::DecodeReport(text);
  (void)baton::codec::DecodeOrders(text);
  (void)baton::codec::DecodeRegisterReply(text);
  if (auto job = baton::codec::DecodeJob(text)) {
    (void)baton::codec::EncodeJob(*job, baton::codec::JobForm::kRecord);
    // What `baton submit` reads of the same answer is what the whole decoder read.
    auto submitted = baton::codec::DecodeSubmitted(text);
    if (!submitted || submitted->id != job->id || submitted->schedule != job->spec.schedule ||
        submitted->begin != job->spec.begin)
      std::abort();
  }
  (void)baton::codec::DecodeNodeList(text);
  (void)baton::codec::DecodeInjectBody(text);
  for (auto verb :
       {baton::ProviderVerb::kResume, baton::ProviderVerb::kSuspend, baton::ProviderVerb::kList})
    (void)baton::codec::DecodeProviderAnswer(text, verb);
  if (auto u = baton::codec::DecodeUsage(text))
    (void)baton::codec::EncodeUsage(u->projects, u->users, u->nodes, u->currency);
  (void)baton::codec::DecodeTokenBody(text);
  if (auto t = baton::codec::DecodeTokenList(text)) (void)baton::codec::EncodeTokenList(*t);
  for (bool ended : {false, true}) {
    (void)baton::codec::EncodeMetricsLines(baton::JobId{1}, "n1", text, 0,
                                           static_cast<int64_t>(size), ended);
  }
  return 0;
}
