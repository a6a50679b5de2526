// Env: the agent's one window on the operating system's files and processes, so that tests
// drive the agent over a fake (in-memory files, injected write failures, processes that come
// and go) and production over PosixEnv (posix_env.h). Starting processes is the Executor's
// (executor.h); asking after them and signalling them is the Env's.
//
// Thread-safety: an Env is used from several threads at once; implementations must allow it.
// Errors are Status values whose message names the path or pid and the failing step.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_util.h"
#include "core/status.h"

namespace baton::agent {

class Env {
 public:
  static constexpr size_t kWholeFile = std::numeric_limits<size_t>::max();

  virtual ~Env() = default;

  // Files. A missing file is NotFound; other failures Internal. An agent running as root
  // works in directories its jobs' users own, so no call follows a symbolic link in the last
  // component of its path: reads and appends fail on a link, sizes are a link's own, modes and
  // owners change the link itself (or fail).
  // Up to `max` bytes from `offset` ("" at or past the end).
  virtual Result<std::string> ReadRange(const std::string& path, int64_t offset, size_t max) = 0;
  Result<std::string> ReadFile(const std::string& path) { return ReadRange(path, 0, kWholeFile); }
  virtual Result<int64_t> FileSize(const std::string& path) = 0;
  // Readers see the old contents or the new, never part (core/file_util.h).
  virtual Status WriteFileAtomic(const std::string& path, std::string_view contents,
                                 WriteFileOptions options) = 0;
  // Appends, creating the file (0600) when there is none.
  virtual Status AppendFile(const std::string& path, std::string_view contents) = 0;
  // Writes `contents` at `offset` of an existing file (none: NotFound).
  virtual Status WriteAt(const std::string& path, int64_t offset, std::string_view contents) = 0;
  // Frees the disk under `length` bytes from `offset` of an existing file, which then read as
  // zeros; its size stays (fallocate's PUNCH_HOLE). Unimplemented where the file system cannot.
  virtual Status PunchHole(const std::string& path, int64_t offset, int64_t length) = 0;
  // The names (not paths) of the entries of `dir`, in no particular order.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // Creates `dir` and its missing parents; Ok when it exists.
  virtual Status CreateDirs(const std::string& dir) = 0;
  // Ok when there was nothing to remove.
  virtual Status RemoveFile(const std::string& path) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status SetMode(const std::string& path, mode_t mode) = 0;
  virtual Status SetOwner(const std::string& path, uid_t uid, gid_t gid) = 0;
  // `dir` (a directory, not a link to one) and everything under it, never following a symbolic
  // link (each link itself changes).
  virtual Status SetOwnerTree(const std::string& dir, uid_t uid, gid_t gid) = 0;

  // Processes.
  // Whether this process runs as root (then jobs run as their users).
  virtual bool RunsAsRoot() = 0;
  // The start time of a live process (clock ticks since boot), or 0 when there is none or it
  // is a zombie: with the pid, it tells a process from a later one given the same pid.
  virtual uint64_t ProcessStartTicks(pid_t pid) = 0;
  // kill(2): a negative pid signals that process group.
  virtual Status Signal(pid_t pid, int sig) = 0;
  // Runs a program (looked up in PATH) to its end; an error says how it failed, with what it
  // wrote to stderr (its first 2 KiB). For tools such as tar.
  virtual Status RunTool(const std::vector<std::string>& argv) = 0;
};

// Forwards every call to another Env: a test double derives from it and overrides only the
// calls it changes. `target` must outlive the wrapper.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env& target) : target_(target) {}
  Env& target() const { return target_; }

  Result<std::string> ReadRange(const std::string& path, int64_t offset, size_t max) override {
    return target_.ReadRange(path, offset, max);
  }
  Result<int64_t> FileSize(const std::string& path) override { return target_.FileSize(path); }
  Status WriteFileAtomic(const std::string& path, std::string_view contents,
                         WriteFileOptions options) override {
    return target_.WriteFileAtomic(path, contents, options);
  }
  Status AppendFile(const std::string& path, std::string_view contents) override {
    return target_.AppendFile(path, contents);
  }
  Status WriteAt(const std::string& path, int64_t offset, std::string_view contents) override {
    return target_.WriteAt(path, offset, contents);
  }
  Status PunchHole(const std::string& path, int64_t offset, int64_t length) override {
    return target_.PunchHole(path, offset, length);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    return target_.ListDir(dir);
  }
  Status CreateDirs(const std::string& dir) override { return target_.CreateDirs(dir); }
  Status RemoveFile(const std::string& path) override { return target_.RemoveFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return target_.RenameFile(from, to);
  }
  Status SetMode(const std::string& path, mode_t mode) override {
    return target_.SetMode(path, mode);
  }
  Status SetOwner(const std::string& path, uid_t uid, gid_t gid) override {
    return target_.SetOwner(path, uid, gid);
  }
  Status SetOwnerTree(const std::string& dir, uid_t uid, gid_t gid) override {
    return target_.SetOwnerTree(dir, uid, gid);
  }
  bool RunsAsRoot() override { return target_.RunsAsRoot(); }
  Status RunTool(const std::vector<std::string>& argv) override { return target_.RunTool(argv); }
  uint64_t ProcessStartTicks(pid_t pid) override { return target_.ProcessStartTicks(pid); }
  Status Signal(pid_t pid, int sig) override { return target_.Signal(pid, sig); }

 private:
  Env& target_;
};

}  // namespace baton::agent
