// Fuzz target: a job spec as the API receives it (POST /v1/jobs and /v1/jobs/batch bodies), and
// the fields of one that change (PATCH /v1/jobs/{id}: only those it names, never none).
// Whatever the bytes, decoding returns a spec that validates, or an error; it never crashes,
// and a decoded spec survives encoding and decoding again unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "codec/job_patch.h"
#include "codec/json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = baton::codec::DecodeJobSpec(text);
  if (spec) {
    if (!baton::ValidateJobSpec(*spec).ok()) std::abort();
    auto again = baton::codec::DecodeJobSpec(baton::codec::EncodeJobSpec(*spec));
    if (!again || !(*again == *spec)) std::abort();
  }
  (void)baton::codec::DecodeJobSpecs(text);
  if (auto patch = baton::codec::DecodeJobPatch(text); patch && patch->set.empty()) std::abort();
  return 0;
}
