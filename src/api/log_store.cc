#include "api/log_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace baton::api {
namespace fs = std::filesystem;

LogStore::LogStore(std::string dir) : dir_(std::move(dir)) {}

std::string LogStore::Path(JobId job, const std::string& node) const {
  return dir_ + "/" + job.ToString() + "/" + node + ".log";
}

Status LogStore::Write(JobId job, const std::string& node, int64_t offset, std::string_view data) {
  std::error_code ec;
  fs::create_directories(dir_ + "/" + job.ToString(), ec);
  int fd = open(Path(job, node).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("log " + Path(job, node) + ": " + strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n =
        pwrite(fd, data.data() + done, data.size() - done, offset + static_cast<int64_t>(done));
    if (n <= 0) {
      int err = errno;
      close(fd);
      return Internal("log " + Path(job, node) + ": " + strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return Status::Ok();
}

Result<LogStore::Chunk> LogStore::Read(JobId job, const std::string& node, int64_t offset,
                                       size_t max) const {
  Chunk c;
  int fd = open(Path(job, node).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return c;  // nothing shipped yet
  struct stat st {};
  fstat(fd, &st);
  c.size = st.st_size;
  if (offset < c.size) {
    size_t want = std::min<size_t>(max, static_cast<size_t>(c.size - offset));
    c.data.resize(want);
    ssize_t n = pread(fd, c.data.data(), want, offset);
    c.data.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  close(fd);
  return c;
}

std::vector<std::string> LogStore::Nodes(JobId job) const {
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_ + "/" + job.ToString(), ec)) {
    if (e.path().extension() != ".log") continue;
    found.emplace_back(e.last_write_time(ec), e.path().stem().string());
  }
  std::sort(found.begin(), found.end(), std::greater<>());
  std::vector<std::string> out;
  for (auto& [t, n] : found) out.push_back(std::move(n));
  return out;
}

}  // namespace baton::api
