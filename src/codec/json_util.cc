#include "codec/internal/json_util.h"

#include <cmath>

#include "codec/json_codec.h"

namespace baton::codec::internal {

// Only called on a failed parse, to word the error: RFC 3629 well-formed UTF-8.
bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    int extra;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(extra) >= text.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      auto cc = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (extra == 3 && (cp < 0x10000 || cp > 0x10ffff))) {
      return false;
    }
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

Result<json::value> Parse(std::string_view text) {
  json::parse_options opt;
  opt.max_depth = kMaxJsonDepth;
  opt.allow_comments = false;
  opt.allow_trailing_commas = false;
  opt.allow_invalid_utf8 = false;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, {}, opt);
  if (ec) {
    if (ec == json::error::too_deep) {
      return Err(InvalidArgument("body: JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                 " levels"));
    }
    if (ec == json::error::syntax && !IsValidUtf8(text)) {
      // Boost reports invalid UTF-8 as a syntax error; say which.
      return Err(InvalidArgument("body: not valid UTF-8 (JSON text must be UTF-8)"));
    }
    return Err(InvalidArgument("body: not valid JSON (" + ec.message() + ")"));
  }
  return v;
}

Result<Duration> GetDuration(const json::value& v, std::string_view field) {
  if (v.is_string()) {
    return ParseDuration(std::string_view(v.get_string().data(), v.get_string().size()), field);
  }
  if (v.is_number()) {
    ASSIGN_OR_RETURN(double secs, GetNumber(v, field));
    return DurationFromSeconds(secs, field);
  }
  return Err(FieldError(field, "must be seconds (a number) or a string such as 90s, 30m, 2h"));
}

Status FieldError(std::string_view field, std::string_view why) {
  return InvalidArgument(std::string(field) + ": " + std::string(why));
}

std::string Join(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return std::string(prefix) + "." + std::string(key);
}

Result<std::string> GetString(const json::value& v, std::string_view field, size_t max_bytes) {
  if (!v.is_string()) return Err(FieldError(field, "must be a string"));
  const json::string& s = v.get_string();
  if (s.size() > max_bytes) {
    return Err(FieldError(field, "longer than " + std::to_string(max_bytes) + " bytes"));
  }
  return std::string(s.data(), s.size());
}

Result<int64_t> GetInt(const json::value& v, std::string_view field, int64_t lo, int64_t hi) {
  int64_t n = 0;
  if (v.is_int64()) {
    n = v.get_int64();
  } else if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<uint64_t>(hi)) {
      return Err(FieldError(field, "at most " + std::to_string(hi)));
    }
    n = static_cast<int64_t>(v.get_uint64());
  } else if (v.is_double()) {
    double d = v.get_double();
    if (std::isnan(d) || d != std::floor(d) || d < static_cast<double>(lo) ||
        d > static_cast<double>(hi)) {
      return Err(FieldError(field, "must be a whole number between " + std::to_string(lo) +
                                       " and " + std::to_string(hi)));
    }
    n = static_cast<int64_t>(d);
  } else {
    return Err(FieldError(field, "must be a number"));
  }
  if (n < lo || n > hi) {
    return Err(
        FieldError(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi)));
  }
  return n;
}

Result<double> GetNumber(const json::value& v, std::string_view field) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return Err(FieldError(field, "must be a number"));
}

Result<bool> GetBool(const json::value& v, std::string_view field) {
  if (!v.is_bool()) return Err(FieldError(field, "must be true or false"));
  return v.get_bool();
}

Result<const json::object*> GetObject(const json::value& v, std::string_view field) {
  if (!v.is_object()) return Err(FieldError(field.empty() ? "body" : field, "must be an object"));
  return &v.get_object();
}

Result<const json::array*> GetArray(const json::value& v, std::string_view field) {
  if (!v.is_array()) return Err(FieldError(field, "must be an array"));
  return &v.get_array();
}

const json::value* Find(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view in, std::string_view field) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return Err(FieldError(field, "not base64"));
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      v[k] = value(c);
      if (v[k] < 0 || pad > 0) return Err(FieldError(field, "not base64"));
    }
    uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 255);
    if (pad < 1) out += static_cast<char>(n & 255);
  }
  return out;
}

json::value TimeValue(TimePoint t) { return json::value(FormatRfc3339(t)); }

Result<TimePoint> GetTime(const json::value& v, std::string_view field) {
  if (!v.is_string()) return Err(FieldError(field, "must be an RFC 3339 time string"));
  auto t = ParseRfc3339(std::string_view(v.get_string().data(), v.get_string().size()));
  if (!t) return Err(FieldError(field, t.error().message()));
  return *t;
}

}  // namespace baton::codec::internal
