// Fuzz target: what reaches Baton from the network and the disk beyond protocol_fuzz's: a
// session's frames (whole and a byte at a time, as a relay may cut them), a drain's body, URLs
// as --server, BATON_SERVER and X-Baton-Leader give them, the agent's run records, the data
// directory's store mark, and a spot node's reclaim notices (--reclaim-notice, the clouds'
// metadata answers, a notice file).
#include <cstdint>
#include <string_view>

#include "agent/reclaim_watch.h"
#include "agent/run_file.h"
#include "codec/json_codec.h"
#include "core/session_frame.h"
#include "net/http_client.h"
#include "net/server_list.h"
#include "store/store_mark.h"

namespace {

void ReadFrames(std::string_view text, size_t piece) {
  baton::FrameReader reader;
  for (size_t at = 0; at < text.size(); at += piece) {
    reader.Feed(text.substr(at, piece));
    for (int i = 0; i < 64; ++i) {
      auto frame = reader.Next();
      if (!frame || !frame->has_value()) break;
      (void)baton::EncodeFrame((*frame)->type, (*frame)->payload);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ReadFrames(text, text.size() + 1);
  if (size <= 4096) ReadFrames(text, 1);
  (void)baton::codec::DecodeDrainBody(text);
  (void)baton::net::ParseHttpUrl(text);
  (void)baton::net::ParseBaseUrl(text);
  if (auto list = baton::net::ServerList::Parse(text)) (void)(*list)->ToString();
  (void)baton::agent::ParseReclaimSource(text);
  (void)baton::agent::AwsAnswer(200, text, baton::TimePoint{});
  (void)baton::agent::GcpAnswer(200, text, baton::TimePoint{});
  (void)baton::agent::FileAnswer(text, baton::TimePoint{});
  if (auto record = baton::agent::DecodeRunRecord(text))
    (void)baton::agent::EncodeRunRecord(*record);
  if (auto mark = baton::store::DecodeStoreMark(text)) (void)baton::store::EncodeStoreMark(*mark);
  return 0;
}
