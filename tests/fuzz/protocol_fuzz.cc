// Fuzz target: what agents send the controller (register, report) and what the controller
// sends agents (orders), and job records as the store keeps them.
#include <cstdint>
#include <string_view>

#include "codec/json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)baton::codec::DecodeRegister(text);
  (void)baton::codec::DecodeReport(text);
  (void)baton::codec::DecodeOrders(text);
  (void)baton::codec::DecodeRegisterReply(text);
  if (auto job = baton::codec::DecodeJob(text))
    (void)baton::codec::EncodeJob(*job, baton::codec::JobForm::kRecord);
  (void)baton::codec::DecodeNodeList(text);
  (void)baton::codec::DecodeInjectBody(text);
  (void)baton::codec::DecodeTokenBody(text);
  if (auto t = baton::codec::DecodeTokenList(text)) (void)baton::codec::EncodeTokenList(*t);
  return 0;
}
