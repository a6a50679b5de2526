#include "core/log.h"

#include <atomic>
#include <iostream>

namespace baton {
namespace {

LogSink& Sink() {
  static LogSink sink;
  return sink;
}

std::atomic<int>& Level() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kInfo)};
  return level;
}

}  // namespace

Result<LogLevel> ParseLogLevel(std::string_view name, std::string_view field) {
  if (name == "warning") return LogLevel::kWarn;
  return ParseEnum<LogLevel>(kLogLevelNames, field, name);
}

void SetLogSink(LogSink sink, LogLevel level) {
  Sink() = std::move(sink);
  Level() = static_cast<int>(level);
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= Level().load(std::memory_order_relaxed);
}

std::string LogText(std::string_view message, const LogContext& context) {
  if (context.component == "agent" && !context.node.empty()) {
    return "agent " + context.node + ": " + std::string(message);
  }
  return std::string(message);
}

void Log(LogLevel level, std::string_view message, const LogContext& context) {
  if (!LogEnabled(level)) return;
  if (const LogSink& sink = Sink()) {
    sink(level, message, context);
    return;
  }
  std::cerr << "baton: " + LogText(message, context) + "\n" << std::flush;
}

}  // namespace baton
