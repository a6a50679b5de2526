#include "core/session_frame.h"

namespace baton {

std::string EncodeFrame(FrameType type, std::string_view payload) {
  std::string out;
  out.reserve(5 + payload.size());
  out.push_back(static_cast<char>(type));
  auto n = static_cast<uint32_t>(payload.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  out.append(payload);
  return out;
}

Result<std::optional<Frame>> FrameReader::Next() {
  if (buffer_.size() - start_ < 5) return std::optional<Frame>();
  auto type = static_cast<FrameType>(buffer_[start_]);
  switch (type) {
    case FrameType::kData:
    case FrameType::kResize:
    case FrameType::kEof:
    case FrameType::kExit:
    case FrameType::kNote:
      break;
    default:
      return Err(InvalidArgument("session: not a session frame (type byte " +
                                 std::to_string(static_cast<unsigned char>(type)) + ")"));
  }
  uint32_t n = 0;
  for (int i = 1; i <= 4; ++i) n = (n << 8) | static_cast<unsigned char>(buffer_[start_ + i]);
  if (n > kMaxFramePayload)
    return Err(InvalidArgument("session: a frame of " + std::to_string(n) + " bytes"));
  if (buffer_.size() - start_ - 5 < n) return std::optional<Frame>();
  Frame f{.type = type, .payload = buffer_.substr(start_ + 5, n)};
  start_ += 5 + n;
  if (start_ > 64 * 1024 || start_ == buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

}  // namespace baton
