// Status and Result<T>: how fallible operations report failure across all of Baton.
// A small canonical code set; api/ maps each code to one HTTP status in one place.
#pragma once

#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>

namespace baton {

enum class Code {
  kOk,
  kInvalidArgument,   // the caller sent something wrong; the message names the field
  kNotFound,          // no such job, node, ...
  kConflict,          // the thing exists, or is in a state that forbids the operation
  kUnauthenticated,   // no or unknown credentials
  kPermissionDenied,  // known caller, not allowed
  kTooLarge,          // a request or value over a configured bound
  kUnavailable,       // try again later (store down, shutting down)
  kInternal,          // a failure of ours or of the operating system
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
inline Status Unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status TooLarge(std::string m) { return {Code::kTooLarge, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

// Result<T> holds a T or a non-ok Status.
template <typename T>
using Result = tl::expected<T, Status>;

inline tl::unexpected<Status> Err(Status s) { return tl::unexpected<Status>(std::move(s)); }

}  // namespace baton

#define BATON_CONCAT_INNER(a, b) a##b
#define BATON_CONCAT(a, b) BATON_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when `expr` (a Status) is not ok.
#define RETURN_IF_ERROR(expr)                           \
  do {                                                  \
    ::baton::Status _st = (expr);                       \
    if (!_st.ok()) return ::baton::Err(std::move(_st)); \
  } while (0)

// Like RETURN_IF_ERROR, for functions that themselves return Status.
#define RETURN_STATUS_IF_ERROR(expr) \
  do {                               \
    ::baton::Status _st = (expr);    \
    if (!_st.ok()) return _st;       \
  } while (0)

// ASSIGN_OR_RETURN(lhs, result_expr): unwraps a Result or returns its error.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                       \
  auto BATON_CONCAT(_res_, __LINE__) = (rexpr);                            \
  if (!BATON_CONCAT(_res_, __LINE__)) {                                    \
    return ::baton::Err(std::move(BATON_CONCAT(_res_, __LINE__).error())); \
  }                                                                        \
  lhs = std::move(*BATON_CONCAT(_res_, __LINE__))

// The same, for functions that themselves return Status.
#define ASSIGN_OR_RETURN_STATUS(lhs, rexpr)                  \
  auto BATON_CONCAT(_res_, __LINE__) = (rexpr);              \
  if (!BATON_CONCAT(_res_, __LINE__)) {                      \
    return std::move(BATON_CONCAT(_res_, __LINE__).error()); \
  }                                                          \
  lhs = std::move(*BATON_CONCAT(_res_, __LINE__))
