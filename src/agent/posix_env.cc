#include "agent/posix_env.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace baton::agent {
namespace fs = std::filesystem;
namespace {

Status Failed(const std::string& what, const std::string& path, int err) {
  if (err == ENOENT) return NotFound(path + ": no such file or directory");
  return Internal("cannot " + what + " " + path + ": " + std::strerror(err));
}

Status Failed(const std::string& what, const std::string& path, const std::error_code& ec) {
  if (ec == std::errc::no_such_file_or_directory)
    return NotFound(path + ": no such file or directory");
  return Internal("cannot " + what + " " + path + ": " + ec.message());
}

// Closes the descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

Result<std::string> PosixEnv::ReadRange(const std::string& path, int64_t offset, size_t max) {
  // O_NOFOLLOW: an agent running as root reads files in directories its jobs' users own; a
  // link a job put there in place of its log must not make the agent read (and ship) another
  // file.
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (f.fd < 0) return Err(Failed("open", path, errno));
  std::string out;
  char buf[64 * 1024];
  while (out.size() < max) {
    size_t want = std::min(sizeof buf, max - out.size());
    ssize_t n = pread(f.fd, buf, want, offset + static_cast<int64_t>(out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Err(Failed("read", path, errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Result<int64_t> PosixEnv::FileSize(const std::string& path) {
  struct stat st {};
  // lstat: the size of a link, not of what it points to (see ReadRange).
  if (lstat(path.c_str(), &st) != 0) return Err(Failed("stat", path, errno));
  return static_cast<int64_t>(st.st_size);
}

Status PosixEnv::WriteFileAtomic(const std::string& path, std::string_view contents,
                                 WriteFileOptions options) {
  return baton::WriteFileAtomic(path, contents, options);
}

Status PosixEnv::AppendFile(const std::string& path, std::string_view contents) {
  Fd f{open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)};
  if (f.fd < 0) return Failed("open", path, errno);
  while (!contents.empty()) {
    ssize_t n = write(f.fd, contents.data(), contents.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failed("append to", path, errno);
    contents.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status PosixEnv::WriteAt(const std::string& path, int64_t offset, std::string_view contents) {
  Fd f{open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (f.fd < 0) return Failed("open", path, errno);
  while (!contents.empty()) {
    ssize_t n = pwrite(f.fd, contents.data(), contents.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failed("write to", path, errno);
    contents.remove_prefix(static_cast<size_t>(n));
    offset += n;
  }
  return Status::Ok();
}

Status PosixEnv::PunchHole(const std::string& path, int64_t offset, int64_t length) {
  Fd f{open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW)};
  if (f.fd < 0) return Failed("open", path, errno);
  if (fallocate(f.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length) != 0) {
    int err = errno;
    if (err == EOPNOTSUPP) {
      return Unavailable("cannot free the middle of " + path +
                         ": its file system cannot punch holes");
    }
    return Failed("punch a hole in", path, err);
  }
  return Status::Ok();
}

Result<std::vector<std::string>> PosixEnv::ListDir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  if (ec) return Err(Failed("list", dir, ec));
  return names;
}

Status PosixEnv::CreateDirs(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return ec ? Failed("create", dir, ec) : Status::Ok();
}

Status PosixEnv::RemoveFile(const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return Failed("remove", path, errno);
  return Status::Ok();
}

Status PosixEnv::RenameFile(const std::string& from, const std::string& to) {
  if (rename(from.c_str(), to.c_str()) != 0) return Failed("rename " + from + " to", to, errno);
  return Status::Ok();
}

Status PosixEnv::SetMode(const std::string& path, mode_t mode) {
  // Never through a link (Linux refuses to change a link's own mode: the call fails).
  if (fchmodat(AT_FDCWD, path.c_str(), mode, AT_SYMLINK_NOFOLLOW) != 0)
    return Failed("set the mode of", path, errno);
  return Status::Ok();
}

Status PosixEnv::SetOwner(const std::string& path, uid_t uid, gid_t gid) {
  // lchown: a link a job's user put in place of a directory changes, not what it points to.
  if (lchown(path.c_str(), uid, gid) != 0) return Failed("set the owner of", path, errno);
  return Status::Ok();
}

Status PosixEnv::SetOwnerTree(const std::string& dir, uid_t uid, gid_t gid) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return Failed("set the owner of", dir, errno);
  if (!S_ISDIR(st.st_mode)) return Internal("cannot set the owner of " + dir + ": not a directory");
  if (lchown(dir.c_str(), uid, gid) != 0) return Failed("set the owner of", dir, errno);
  std::error_code ec;
  // The iterator does not descend into linked directories; lchown changes a link, not its target.
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (lchown(it->path().c_str(), uid, gid) != 0)
      return Failed("set the owner of", it->path().string(), errno);
  }
  if (ec) return Failed("list", dir, ec);
  return Status::Ok();
}

bool PosixEnv::RunsAsRoot() { return geteuid() == 0; }

uint64_t PosixEnv::ProcessStartTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return 0;
  std::string line;
  std::getline(in, line);
  // Field 2 is "(comm)", which may hold spaces: count fields after the last ')'.
  size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(close_paren + 2));
  std::string field;
  char state = 0;
  rest >> state;
  if (state == 'Z' || state == 'X') return 0;  // a zombie is not alive
  for (int i = 4; i <= 22; ++i) {
    rest >> field;
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

Status PosixEnv::Signal(pid_t pid, int sig) {
  if (kill(pid, sig) != 0) {
    return Internal(
        "cannot send signal " + std::to_string(sig) + " to " +
        (pid < 0 ? "process group " + std::to_string(-pid) : "process " + std::to_string(pid)) +
        ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status PosixEnv::RunTool(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("no program to run");
  int err[2];
  if (pipe2(err, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(err[1]);
  std::string said;
  char buf[512];
  ssize_t n;
  while (rc == 0 && (n = read(err[0], buf, sizeof buf)) > 0) {
    if (said.size() < 2048) said.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);
  if (rc != 0) return Unavailable("cannot run " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  return Internal(argv[0] + " failed (" +
                  (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                     : "signal " + std::to_string(WTERMSIG(status))) +
                  ")" + (said.empty() ? "" : ": " + said.substr(0, 2048)));
}

}  // namespace baton::agent
