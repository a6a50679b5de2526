// Logging with context: every line says its level, and which node, job, GPU or project it is
// about, so that a JSON log can be searched by them. The sink is set once by main (spdlog,
// text or JSON: src/logging.cc); until then lines go to stderr as "baton: MESSAGE". Thread-safe
// once the sink is set; the controller itself never logs (its events are logged by the loop's
// owner).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/names.h"
#include "core/status.h"

namespace baton {

enum class LogLevel { kDebug, kInfo, kWarn, kError };
inline constexpr std::array<std::string_view, 4> kLogLevelNames = {"debug", "info", "warn",
                                                                   "error"};

struct LogContext {
  std::string component;  // "agent", "server", "webhook", ...
  std::string node;
  int64_t job = 0;  // 0: none
  int gpu = -1;     // -1: none
  std::string project;
  std::string kind;  // an event's kind ("gpu_failed"), for alerts
};

using LogSink = std::function<void(LogLevel, std::string_view message, const LogContext&)>;

// debug | info | warn (or warning, spdlog's name) | error; `field` names it in the error.
Result<LogLevel> ParseLogLevel(std::string_view name, std::string_view field = "log level");
inline std::string_view LogLevelName(LogLevel level) { return EnumName(kLogLevelNames, level); }

// REQUIRES: called before other threads log (at start).
void SetLogSink(LogSink sink, LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, std::string_view message, const LogContext& context = {});

inline void LogInfo(std::string_view message, const LogContext& context = {}) {
  Log(LogLevel::kInfo, message, context);
}
inline void LogWarn(std::string_view message, const LogContext& context = {}) {
  Log(LogLevel::kWarn, message, context);
}
inline void LogError(std::string_view message, const LogContext& context = {}) {
  Log(LogLevel::kError, message, context);
}
inline void LogDebug(std::string_view message, const LogContext& context = {}) {
  Log(LogLevel::kDebug, message, context);
}

// The line the text format prints after "baton: ": the message, after "agent NODE: " for an
// agent's lines.
std::string LogText(std::string_view message, const LogContext& context);

}  // namespace baton
