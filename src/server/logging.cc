#include "server/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <string_view>

#include "core/log.h"

namespace baton::server {
namespace {

enum class LogFormat { kText, kJson };
constexpr std::array<std::string_view, 2> kLogFormatNames = {"text", "json"};

spdlog::level::level_enum SpdLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::string Quoted(std::string_view s) { return boost::json::serialize(boost::json::string(s)); }

// The JSON line's fields after time and level: "msg", then the context that is set.
std::string JsonFields(std::string_view message, const LogContext& c) {
  std::string out = "\"msg\":" + Quoted(message);
  if (!c.component.empty()) out += ",\"component\":" + Quoted(c.component);
  if (!c.node.empty()) out += ",\"node\":" + Quoted(c.node);
  if (c.job > 0) out += ",\"job\":" + std::to_string(c.job);
  if (c.gpu >= 0) out += ",\"gpu\":" + std::to_string(c.gpu);
  if (!c.project.empty()) out += ",\"project\":" + Quoted(c.project);
  if (!c.kind.empty()) out += ",\"kind\":" + Quoted(c.kind);
  return out;
}

}  // namespace

Status SetUpLogging(const std::string& level_name, const std::string& format) {
  ASSIGN_OR_RETURN(LogLevel level, ParseLogLevel(level_name, "--log-level"));
  ASSIGN_OR_RETURN(LogFormat form, ParseEnum<LogFormat>(kLogFormatNames, "--log-format", format));
  auto logger = spdlog::stderr_logger_mt("baton");
  logger->set_level(SpdLevel(level));
  logger->flush_on(spdlog::level::debug);  // every line at once: logs are read as things happen
  bool json = form == LogFormat::kJson;
  if (json) {
    // %l is spdlog's level name (debug, info, warning, error).
    logger->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})",
                        spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("baton: %v");
  }
  SetLogSink(
      [logger, json](LogLevel lvl, std::string_view message, const LogContext& context) {
        std::string line = json ? JsonFields(message, context) : LogText(message, context);
        logger->log(SpdLevel(lvl), std::string_view(line));
      },
      level);
  return Status::Ok();
}

int Fail(const Status& st) {
  LogError(st.message());
  return 1;
}

}  // namespace baton::server
