#include "core/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace baton {
namespace {

Status Failed(const std::string& what, const std::string& path, int err) {
  return Internal("cannot " + what + " " + path + ": " + std::strerror(err));
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Failed("write", path, errno);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomic(const std::string& path, std::string_view contents,
                       WriteFileOptions options) {
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, options.mode);
  if (fd < 0) return Failed("create", tmp, errno);
  Status st = WriteAll(fd, contents, tmp);
  if (st.ok() && options.sync && fsync(fd) != 0) st = Failed("sync", tmp, errno);
  // The umask may have narrowed the mode open gave the file.
  if (st.ok() && fchmod(fd, options.mode) != 0) st = Failed("set the mode of", tmp, errno);
  if (close(fd) != 0 && st.ok()) st = Failed("close", tmp, errno);
  if (st.ok() && rename(tmp.c_str(), path.c_str()) != 0) st = Failed("rename onto", path, errno);
  if (!st.ok()) {
    unlink(tmp.c_str());
    return st;
  }
  // The rename is an entry of the directory: it survives a crash of the machine only once the
  // directory itself is synced.
  if (options.sync) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return Failed("open the directory of", path, errno);
    if (fsync(dfd) != 0) st = Failed("sync the directory of", path, errno);
    close(dfd);
  }
  return st;
}

Status CheckPrivate(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return Status::Ok();
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  bool dir = S_ISDIR(st.st_mode);
  return PermissionDenied(path + " (" + what + ") may be read by others (mode " + mode +
                          "): chmod " + (dir ? "700 " : "600 ") + path + " and check who read it");
}

}  // namespace baton
