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

// Result<T> holds a T or a non-ok Status. Like Status, it must not be dropped unlooked at.
template <typename T>
class [[nodiscard]] Result : public tl::expected<T, Status> {
 public:
  using tl::expected<T, Status>::expected;
  Result(tl::expected<T, Status> e) : tl::expected<T, Status>(std::move(e)) {}  // .map() and such
};

inline tl::unexpected<Status> Err(Status s) { return tl::unexpected<Status>(std::move(s)); }

namespace internal {

// What RETURN_IF_ERROR and ASSIGN_OR_RETURN return from the enclosing function: a failed
// Status, becoming that function's Status or Result<T>, whichever it returns.
class Propagated {
 public:
  explicit Propagated(Status s) : status_(std::move(s)) {}
  operator Status() && { return std::move(status_); }
  template <typename T>
  operator Result<T>() && {
    return Err(std::move(status_));
  }

 private:
  Status status_;
};

}  // namespace internal
}  // namespace baton

#define BATON_CONCAT_INNER(a, b) a##b
#define BATON_CONCAT(a, b) BATON_CONCAT_INNER(a, b)

// In a function returning Status or Result<T>: returns the status of `expr` (a Status) when it
// is not ok.
#define RETURN_IF_ERROR(expr)                                            \
  do {                                                                   \
    ::baton::Status _st = (expr);                                        \
    if (!_st.ok()) return ::baton::internal::Propagated(std::move(_st)); \
  } while (0)

// In a function returning Status or Result<T>: ASSIGN_OR_RETURN(lhs, result_expr) unwraps a
// Result into `lhs`, or returns its error.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                                        \
  auto BATON_CONCAT(_res_, __LINE__) = (rexpr);                                             \
  if (!BATON_CONCAT(_res_, __LINE__)) {                                                     \
    return ::baton::internal::Propagated(std::move(BATON_CONCAT(_res_, __LINE__).error())); \
  }                                                                                         \
  lhs = std::move(*BATON_CONCAT(_res_, __LINE__))
