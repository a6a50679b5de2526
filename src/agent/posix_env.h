// The Env of a real Linux host: files through POSIX calls, processes through /proc and kill(2).
// Built once, in main.cc, and shared by the agent and its executor.
#pragma once

#include "agent/env.h"

namespace baton::agent {

class PosixEnv : public Env {
 public:
  Result<std::string> ReadRange(const std::string& path, int64_t offset, size_t max) override;
  Result<int64_t> FileSize(const std::string& path) override;
  Status WriteFileAtomic(const std::string& path, std::string_view contents,
                         WriteFileOptions options) override;
  Status AppendFile(const std::string& path, std::string_view contents) override;
  Status WriteAt(const std::string& path, int64_t offset, std::string_view contents) override;
  Status PunchHole(const std::string& path, int64_t offset, int64_t length) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status CreateDirs(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status SetMode(const std::string& path, mode_t mode) override;
  Status SetOwner(const std::string& path, uid_t uid, gid_t gid) override;
  bool RunsAsRoot() override;
  uint64_t ProcessStartTicks(pid_t pid) override;
  Status Signal(pid_t pid, int sig) override;
  Status RunTool(const std::vector<std::string>& argv) override;
  Status SetOwnerTree(const std::string& dir, uid_t uid, gid_t gid) override;
};

}  // namespace baton::agent
