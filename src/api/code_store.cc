#include "api/code_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "api/auth.h"
#include "core/file_util.h"
#include "core/job.h"
#include "core/quantity.h"

namespace baton::api {

CodeStore::CodeStore(std::string dir, CodeLimits limits) : dir_(std::move(dir)), limits_(limits) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.ends_with(".tar.gz")) continue;
    std::string id = name.substr(0, name.size() - 7);
    if (!IsCodeId(id)) continue;
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0) continue;
    Snapshot& s = snapshots_[id];
    s.bytes = st.st_size;
    s.last_used = TimePoint(std::chrono::seconds(st.st_mtim.tv_sec));
    std::ifstream owners(OwnersOf(id));
    for (std::string user; std::getline(owners, user);) {
      if (!user.empty()) s.owners.insert(user);
    }
  }
}

Result<std::string> CodeStore::Put(std::string_view archive, const std::string& user,
                                   TimePoint now) {
  if (archive.size() < 2 || static_cast<unsigned char>(archive[0]) != 0x1f ||
      static_cast<unsigned char>(archive[1]) != 0x8b) {
    return Err(InvalidArgument("code: not a gzip archive (baton submit --code DIR makes one)"));
  }
  if (archive.size() > kMaxBytes) {
    return Err(
        TooLarge("code: larger than " + std::to_string(kMaxBytes >> 20) + " MiB compressed"));
  }
  RETURN_IF_ERROR(CheckWhole(archive));
  std::string id = Sha256Hex(archive);
  std::lock_guard lock(mu_);
  auto it = snapshots_.find(id);
  if (it != snapshots_.end() && it->second.owners.contains(user)) {
    it->second.last_used = std::max(it->second.last_used, now);  // its retention anew
    return id;
  }
  auto size = static_cast<int64_t>(archive.size());
  if (UserBytesLocked(user) + size > limits_.per_user_bytes) CollectLocked(now);
  if (int64_t taken = UserBytesLocked(user); taken + size > limits_.per_user_bytes) {
    return Err(Conflict(
        "code: " + user + "'s snapshots take " + FormatSize(taken) + ", and this one (" +
        FormatSize(size) + ") would pass the quota of " + FormatSize(limits_.per_user_bytes) +
        " per user (--code-quota); a snapshot no running or queued job uses is "
        "deleted " +
        FormatDuration(limits_.retention) + " after its last use (--code-retention)"));
  }
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    return Err(Internal("code: cannot create " + dir_ + ": " + std::strerror(errno)));
  Snapshot next = it != snapshots_.end() ? it->second : Snapshot{.bytes = size};
  next.owners.insert(user);
  next.last_used = std::max(next.last_used, now);
  std::string owners;
  for (const std::string& o : next.owners) owners += o + "\n";
  RETURN_IF_ERROR(WriteFileAtomic(OwnersOf(id), owners, WriteFileOptions{.mode = 0600}));
  if (it == snapshots_.end()) {
    RETURN_IF_ERROR(WriteFileAtomic(PathOf(id), archive, WriteFileOptions{.mode = 0600}));
  }
  snapshots_[id] = std::move(next);
  return id;
}

void CodeStore::Track(const std::vector<Job>& jobs, TimePoint now) {
  std::lock_guard lock(mu_);
  for (const Job& job : jobs) {
    auto held = job_code_.find(job.id.value);
    bool uses = !job.spec.code.empty() && !IsTerminal(job.state);
    if (held != job_code_.end() && (!uses || held->second != job.spec.code)) {
      if (auto s = snapshots_.find(held->second); s != snapshots_.end()) {
        s->second.refs = std::max(0, s->second.refs - 1);
        s->second.last_used = std::max(s->second.last_used, now);
        // Kept across restarts: the archive's time is its last use.
        struct timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
                                    {.tv_sec = ToMillis(now) / 1000, .tv_nsec = 0}};
        (void)::utimensat(AT_FDCWD, PathOf(held->second).c_str(), times, 0);
      }
      job_code_.erase(held);
      held = job_code_.end();
    }
    if (uses && held == job_code_.end()) {
      job_code_.emplace(job.id.value, job.spec.code);
      if (auto s = snapshots_.find(job.spec.code); s != snapshots_.end()) ++s->second.refs;
    }
  }
}

int CodeStore::Collect(TimePoint now) {
  std::lock_guard lock(mu_);
  return CollectLocked(now);
}

int CodeStore::CollectLocked(TimePoint now) {
  int deleted = 0;
  for (auto it = snapshots_.begin(); it != snapshots_.end();) {
    const Snapshot& s = it->second;
    if (s.refs > 0 || now - s.last_used < limits_.retention) {
      ++it;
      continue;
    }
    ::unlink(PathOf(it->first).c_str());
    ::unlink(OwnersOf(it->first).c_str());
    it = snapshots_.erase(it);
    ++deleted;
  }
  return deleted;
}

int64_t CodeStore::UserBytes(const std::string& user) const {
  std::lock_guard lock(mu_);
  return UserBytesLocked(user);
}

int64_t CodeStore::UserBytesLocked(const std::string& user) const {
  int64_t total = 0;
  for (const auto& [id, s] : snapshots_) {
    if (s.owners.contains(user)) total += s.bytes;
  }
  return total;
}

// The whole gzip stream, inflated to nowhere: a truncated or corrupt upload (a client cut
// off mid-way) is refused now rather than failing every node's unpacking later, and one that
// unpacks to more than kMaxUnpackedBytes (a bomb) too.
Status CodeStore::CheckWhole(std::string_view archive) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Internal("code: zlib cannot start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(archive.data()));
  z.avail_in = static_cast<uInt>(archive.size());
  std::vector<Bytef> out(256 << 10);
  uint64_t total = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    total += out.size() - z.avail_out;
    if (total > kMaxUnpackedBytes) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // the input ended before the stream
  }
  std::string why = z.msg != nullptr ? z.msg : "";
  inflateEnd(&z);
  if (total > kMaxUnpackedBytes) {
    return TooLarge("code: unpacks to more than " + std::to_string(kMaxUnpackedBytes >> 30) +
                    " GiB");
  }
  if (rc == Z_STREAM_END) return Status::Ok();
  if (rc == Z_BUF_ERROR || rc == Z_OK) {
    return InvalidArgument("code: the gzip archive is truncated (" +
                           std::to_string(archive.size()) +
                           " bytes arrived; its end is missing): send it again");
  }
  return InvalidArgument("code: not a valid gzip archive" + (why.empty() ? "" : ": " + why));
}

bool CodeStore::Has(const std::string& id) const {
  std::lock_guard lock(mu_);
  return snapshots_.contains(id);
}

Result<std::string> CodeStore::Get(const std::string& id) const {
  if (!IsCodeId(id)) return Err(InvalidArgument("code: not a snapshot id (64 hex digits)"));
  std::ifstream in(PathOf(id), std::ios::binary);
  if (!in) return Err(NotFound("code snapshot " + id.substr(0, 12) + " is not kept here"));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace baton::api
