#include "agent/run_file.h"

#include <sstream>

#include "codec/json_codec.h"

namespace baton::agent {

std::string EncodeRunRecord(const RunRecord& record) {
  Order o;
  o.kind = Order::Kind::kLaunch;
  o.launch = record.order;
  return std::to_string(record.process.shim_pid) + ' ' + std::to_string(record.process.job_pid) +
         ' ' + std::to_string(record.process.shim_start_ticks) + ' ' +
         std::to_string(ToMillis(record.started_at)) + '\n' + codec::EncodeOrders({o}) + '\n';
}

Result<RunRecord> DecodeRunRecord(std::string_view text) {
  size_t nl = text.find('\n');
  if (nl == std::string_view::npos) return Err(InvalidArgument("run file: no second line"));
  std::istringstream first{std::string(text.substr(0, nl))};
  RunRecord r;
  int64_t started_ms = 0;
  std::string rest;
  if (!(first >> r.process.shim_pid >> r.process.job_pid >> r.process.shim_start_ticks >>
        started_ms) ||
      (first >> rest)) {
    return Err(InvalidArgument("run file: line 1 is not four numbers"));
  }
  std::string_view second = text.substr(nl + 1);
  second = second.substr(0, second.find('\n'));
  auto orders = codec::DecodeOrders(second);
  if (!orders) return Err(InvalidArgument("run file: " + orders.error().message()));
  if (orders->size() != 1 || (*orders)[0].kind != Order::Kind::kLaunch)
    return Err(InvalidArgument("run file: line 2 is not one launch order"));
  r.order = (*orders)[0].launch;
  r.started_at = FromMillis(started_ms);
  return r;
}

RunFiles::RunFiles(Env& env, std::string dir, LogContext context)
    : env_(env), dir_(std::move(dir)), context_(std::move(context)) {}

std::string RunFiles::PathOf(JobId job, int attempt) const {
  return dir_ + "/" + JobAttempt{job, attempt}.ToString() + ".run";
}

Status RunFiles::Write(const RunRecord& record) {
  return env_.WriteFileAtomic(PathOf(record.order.job, record.order.attempt),
                              EncodeRunRecord(record), {.mode = 0600, .sync = false});
}

Result<std::vector<RunRecord>> RunFiles::ReadAll() {
  ASSIGN_OR_RETURN(std::vector<std::string> names, env_.ListDir(dir_));
  std::vector<RunRecord> out;
  for (const std::string& name : names) {
    if (name.size() <= 4 || name.compare(name.size() - 4, 4, ".run") != 0) continue;
    std::string path = dir_ + "/" + name;
    auto text = env_.ReadFile(path);
    if (!text) {
      // Perhaps readable later: kept, so that a job still running is not forgotten for good.
      LogError("cannot re-adopt the job of " + path + ": " + text.error().message(), context_);
      continue;
    }
    auto record = DecodeRunRecord(*text);
    if (!record) {
      LogWarn(path + " is unreadable (" + record.error().message() + "): removed", context_);
      if (Status st = env_.RemoveFile(path); !st.ok()) LogWarn(st.message(), context_);
      continue;
    }
    out.push_back(std::move(*record));
  }
  return out;
}

Status RunFiles::Remove(JobId job, int attempt) {
  std::string path = PathOf(job, attempt);
  Status first;
  for (const std::string& p : {path, path + ".exit", path + ".pid"}) {
    Status st = env_.RemoveFile(p);
    if (first.ok()) first = st;
  }
  return first;
}

}  // namespace baton::agent
