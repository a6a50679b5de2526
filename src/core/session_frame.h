// The frames of a session (`baton run`, `baton attach`): what the CLI and a job's shim say to
// each other through the controller and the agent, which only copy bytes (api/relay.h). A frame
// is a type byte, a 4-byte big-endian length and that many bytes (at most kMaxFramePayload).
// baton-shim, which links nothing of ours, has its own copy of this format (shim_main.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace baton {

enum class FrameType : char {
  kData = 'd',    // both ways: terminal or stdin bytes; output
  kResize = 'w',  // client to job: the terminal's size, "ROWS COLS"
  kEof = 'e',     // client to job: its stdin ended
  kExit = 'x',    // job to client: the job ended, "exit N" or "signal N"
  kNote = 'n',    // job to client: a line from Baton (another client attached, idle warning)
};

inline constexpr uint32_t kMaxFramePayload = 1u << 20;

struct Frame {
  FrameType type = FrameType::kData;
  std::string payload;
};

std::string EncodeFrame(FrameType type, std::string_view payload = {});

// Takes whole frames off the bytes fed to it, in order.
class FrameReader {
 public:
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame; nullopt until one is whole. A malformed stream (an unknown type, a
  // frame too large) is an error, and stays one.
  Result<std::optional<Frame>> Next();

 private:
  std::string buffer_;
  size_t start_ = 0;
};

}  // namespace baton
