#include "api/log_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/log.h"
#include "core/quantity.h"

namespace baton::api {
namespace fs = std::filesystem;

LogStore::LogStore(std::string dir) : LogStore(std::move(dir), Limits{}) {}

LogStore::LogStore(std::string dir, Limits limits) : dir_(std::move(dir)), limits_(limits) {
  // Every job's output: the controller's alone, whatever the mode of the directory above
  // (0711 under a `baton up` of root's, so that its local agent's jobs reach their own).
  std::error_code ec;
  fs::create_directories(dir_, ec);
  (void)::chmod(dir_.c_str(), 0700);
}

std::string LogStore::Path(JobId job, const std::string& node, LogStream stream) const {
  return dir_ + "/" + job.ToString() + "/" + node +
         (stream == LogStream::kMetrics ? ".metrics.jsonl" : ".log");
}

Status LogStore::Write(JobId job, const std::string& node, int64_t offset, std::string_view data,
                       LogStream stream, Dropped* dropped) {
  auto drop = [&](int64_t bytes, std::string why) {
    if (dropped != nullptr && bytes > 0) *dropped = Dropped{bytes, std::move(why)};
  };
  if (offset < 0 || offset >= limits_.max_log_bytes) {
    drop(static_cast<int64_t>(data.size()),
         "past the largest log kept (" + FormatSize(limits_.max_log_bytes) + ")");
    return Status::Ok();
  }
  if (static_cast<int64_t>(data.size()) > limits_.max_log_bytes - offset) {
    const size_t keep = static_cast<size_t>(limits_.max_log_bytes - offset);
    drop(static_cast<int64_t>(data.size() - keep),
         "past the largest log kept (" + FormatSize(limits_.max_log_bytes) + ")");
    data = data.substr(0, keep);
  }
  if (limits_.disk_reserve > 0) {
    struct statvfs fs {};
    if (::statvfs(dir_.c_str(), &fs) == 0) {
      const int64_t free_bytes =
          static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
      if (free_bytes - static_cast<int64_t>(data.size()) < limits_.disk_reserve) {
        drop(static_cast<int64_t>(data.size()),
             "its disk has " + FormatSize(free_bytes) + " free, within the reserve of " +
                 FormatSize(limits_.disk_reserve) + " kept for the store (--disk-reserve)");
        return Status::Ok();
      }
    }
  }
  std::error_code ec;
  fs::create_directories(dir_ + "/" + job.ToString(), ec);
  const std::string path = Path(job, node, stream);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("log " + path + ": " + strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        pwrite(fd, data.data() + done, data.size() - done, offset + static_cast<int64_t>(done));
    if (n <= 0) {
      int err = errno;
      close(fd);
      return Internal("log " + path + ": " + strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return Status::Ok();
}

namespace {

// A failure to read a log: said in the server's log (an operator's problem: permissions, a
// full or failing disk) and returned, so that the client gets a 500 with the reason rather than
// an empty log.
Status ReadError(JobId job, const std::string& what, int err) {
  Status st = Internal("log " + what + ": " + strerror(err));
  LogWarn(st.message(), LogContext{.component = "logs", .job = job.value});
  return st;
}

}  // namespace

Result<LogStore::Chunk> LogStore::Read(JobId job, const std::string& node, int64_t offset,
                                       size_t max, LogStream stream) const {
  Chunk c;
  std::string path = Path(job, node, stream);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return c;  // nothing shipped yet
  if (fd < 0) return Err(ReadError(job, path, errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return Err(ReadError(job, path, err));
  }
  c.size = st.st_size;
  if (offset < c.size) {
    size_t want = std::min<size_t>(max, static_cast<size_t>(c.size - offset));
    c.data.resize(want);
    ssize_t n = pread(fd, c.data.data(), want, offset);
    if (n < 0) {
      int err = errno;
      close(fd);
      return Err(ReadError(job, path, err));
    }
    c.data.resize(static_cast<size_t>(n));
  }
  close(fd);
  return c;
}

Result<std::vector<std::string>> LogStore::Nodes(JobId job) const {
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::string dir = dir_ + "/" + job.ToString();
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return std::vector<std::string>{};
  if (ec) return Err(ReadError(job, dir, ec.value()));
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".log") continue;
    found.emplace_back(it->last_write_time(ec), it->path().stem().string());
    if (ec) return Err(ReadError(job, it->path().string(), ec.value()));
  }
  if (ec) return Err(ReadError(job, dir, ec.value()));
  std::sort(found.begin(), found.end(), std::greater<>());
  std::vector<std::string> out;
  for (auto& [t, n] : found) out.push_back(std::move(n));
  return out;
}

}  // namespace baton::api
