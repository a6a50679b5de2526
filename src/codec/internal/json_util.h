// Helpers shared by codec/*.cc for reading Boost.JSON values with errors that name the field.
// Internal to codec/: nothing outside it includes Boost.JSON.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "core/names.h"
#include "core/status.h"
#include "core/time.h"

namespace baton::codec::internal {

namespace json = boost::json;

// Parses text with Baton's bounds (depth, strict UTF-8, no comments, no NaN).
Result<json::value> Parse(std::string_view text);

Status FieldError(std::string_view field, std::string_view why);
// Seconds (a number) or a string such as 90s, 30m, 2h.
Result<Duration> GetDuration(const json::value& v, std::string_view field);
std::string Join(std::string_view prefix, std::string_view key);

Result<std::string> GetString(const json::value& v, std::string_view field, size_t max_bytes);
Result<int64_t> GetInt(const json::value& v, std::string_view field, int64_t lo, int64_t hi);
Result<double> GetNumber(const json::value& v, std::string_view field);
Result<bool> GetBool(const json::value& v, std::string_view field);
Result<const json::object*> GetObject(const json::value& v, std::string_view field);
Result<const json::array*> GetArray(const json::value& v, std::string_view field);

// The value of `key` in `o`; nullptr when it is absent or null.
const json::value* Find(const json::object& o, std::string_view key);

// Base64 (RFC 4648) for bytes that need not be UTF-8, such as job logs.
std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text, std::string_view field);

// Reads `key` of `o` into `out` with `get` (Str, Int, Bool below); absent or null leaves `out`
// unchanged.
template <typename T, typename Get>
Status Read(const json::object& o, std::string_view key, T* out, Get get) {
  const json::value* v = Find(o, key);
  if (v == nullptr) return Status::Ok();
  auto r = get(*v, key);
  if (!r) return r.error();
  *out = static_cast<T>(*r);
  return Status::Ok();
}

inline auto Str(size_t max) {
  return [max](const json::value& v, std::string_view f) { return GetString(v, f, max); };
}
inline auto Int(int64_t lo, int64_t hi) {
  return [lo, hi](const json::value& v, std::string_view f) { return GetInt(v, f, lo, hi); };
}
inline auto Bool() {
  return [](const json::value& v, std::string_view f) { return GetBool(v, f); };
}
// One of an enum's names (core/names.h): the error names the field and the valid names.
template <typename E, size_t N>
auto Named(const std::array<std::string_view, N>& names) {
  return [&names](const json::value& v, std::string_view f) -> Result<E> {
    ASSIGN_OR_RETURN(std::string text, GetString(v, f, 64));
    return ParseEnum<E>(names, f, text);
  };
}

json::value TimeValue(TimePoint t);
Result<TimePoint> GetTime(const json::value& v, std::string_view field);

}  // namespace baton::codec::internal
