// Test doubles for the agent's Env (agent/env.h): MemEnv keeps files in memory and processes in
// a table the test fills, so that the agent runs without touching the host; FaultyEnv wraps
// another Env and fails the writes a test names. Test-only: production never links these.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/env.h"

namespace baton::agent::testing {

class MemEnv : public Env {
 public:
  Result<std::string> ReadRange(const std::string& path, int64_t offset, size_t max) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Err(NotFound(path + ": no such file"));
    if (static_cast<size_t>(offset) >= it->second.size()) return std::string();
    return it->second.substr(static_cast<size_t>(offset), max);
  }
  Result<int64_t> FileSize(const std::string& path) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Err(NotFound(path + ": no such file"));
    return static_cast<int64_t>(it->second.size());
  }
  Status WriteFileAtomic(const std::string& path, std::string_view contents,
                         WriteFileOptions) override {
    std::lock_guard lock(mu_);
    files_[path] = std::string(contents);
    return Status::Ok();
  }
  Status AppendFile(const std::string& path, std::string_view contents) override {
    std::lock_guard lock(mu_);
    files_[path] += contents;
    return Status::Ok();
  }
  Status WriteAt(const std::string& path, int64_t offset, std::string_view contents) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFound(path + ": no such file");
    size_t at = static_cast<size_t>(offset);
    if (it->second.size() < at + contents.size()) it->second.resize(at + contents.size(), '\0');
    it->second.replace(at, contents.size(), contents);
    return Status::Ok();
  }
  // Zeros the range, as a punched hole reads; holes_ counts the bytes punched.
  Status PunchHole(const std::string& path, int64_t offset, int64_t length) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return NotFound(path + ": no such file");
    size_t at = std::min(static_cast<size_t>(offset), it->second.size());
    size_t n = std::min(static_cast<size_t>(length), it->second.size() - at);
    it->second.replace(at, n, n, '\0');
    punched_[path] += length;
    return Status::Ok();
  }
  int64_t Punched(const std::string& path) {
    std::lock_guard lock(mu_);
    return punched_[path];
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    std::lock_guard lock(mu_);
    if (!dirs_.count(dir)) return Err(NotFound(dir + ": no such directory"));
    std::vector<std::string> names;
    for (const auto& [path, data] : files_) {
      if (path.size() > dir.size() + 1 && path.compare(0, dir.size() + 1, dir + "/") == 0 &&
          path.find('/', dir.size() + 1) == std::string::npos)
        names.push_back(path.substr(dir.size() + 1));
    }
    return names;
  }
  Status CreateDirs(const std::string& dir) override {
    std::lock_guard lock(mu_);
    for (size_t i = 1; i != std::string::npos; i = dir.find('/', i + 1))
      dirs_.insert(dir.substr(0, i));
    dirs_.insert(dir);
    return Status::Ok();
  }
  Status RemoveFile(const std::string& path) override {
    std::lock_guard lock(mu_);
    files_.erase(path);
    return Status::Ok();
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    std::lock_guard lock(mu_);
    auto it = files_.find(from);
    if (it == files_.end()) return NotFound(from + ": no such file");
    files_[to] = std::move(it->second);
    files_.erase(from);
    return Status::Ok();
  }
  Status SetMode(const std::string&, mode_t) override { return Status::Ok(); }
  Status SetOwner(const std::string&, uid_t, gid_t) override { return Status::Ok(); }
  bool RunsAsRoot() override { return false; }
  uint64_t ProcessStartTicks(pid_t pid) override {
    std::lock_guard lock(mu_);
    auto it = processes_.find(pid);
    return it == processes_.end() ? 0 : it->second;
  }
  Status SetOwnerTree(const std::string& dir, uid_t uid, gid_t gid) override {
    return SetOwner(dir, uid, gid);
  }
  Status RunTool(const std::vector<std::string>& argv) override {
    return Unavailable("MemEnv runs no programs (" + (argv.empty() ? "" : argv[0]) + ")");
  }
  Status Signal(pid_t pid, int sig) override {
    std::lock_guard lock(mu_);
    signals_.emplace_back(pid, sig);
    return Status::Ok();
  }

  // For the test: files, live processes (pid -> start ticks) and the signals sent.
  bool Exists(const std::string& path) {
    std::lock_guard lock(mu_);
    return files_.count(path) > 0;
  }
  void SetProcess(pid_t pid, uint64_t start_ticks) {
    std::lock_guard lock(mu_);
    if (start_ticks == 0)
      processes_.erase(pid);
    else
      processes_[pid] = start_ticks;
  }
  std::vector<std::pair<pid_t, int>> signals() {
    std::lock_guard lock(mu_);
    return signals_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> files_;
  std::map<std::string, int64_t> punched_;
  std::set<std::string> dirs_;
  std::map<pid_t, uint64_t> processes_;
  std::vector<std::pair<pid_t, int>> signals_;
};

// Fails every atomic write to a path that contains `fragment`, as a full disk or a failed
// rename would.
class FaultyEnv : public EnvWrapper {
 public:
  FaultyEnv(Env& target, std::string fragment)
      : EnvWrapper(target), fragment_(std::move(fragment)) {}
  Status WriteFileAtomic(const std::string& path, std::string_view contents,
                         WriteFileOptions options) override {
    if (path.find(fragment_) != std::string::npos)
      return Internal("cannot rename onto " + path + ": No space left on device");
    return EnvWrapper::WriteFileAtomic(path, contents, options);
  }

 private:
  std::string fragment_;
};

}  // namespace baton::agent::testing
