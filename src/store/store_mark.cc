#include "store/store_mark.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/log.h"
#include "core/text.h"

namespace baton::store {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kHeader =
    "# baton: the store this data directory keeps and how far it got (docs/operations.md)";

std::string Hex(int64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

bool Empty(const Snapshot& s) {
  return s.jobs.empty() && s.tokens.empty() && s.idempotency.empty() && s.drains.empty() &&
         s.next_job_id <= 1;
}

// The first id past every one the directory saw.
int64_t PastNextJobId(const DataPast& past) {
  return std::max(past.mark ? past.mark->next_job_id : 1, past.highest_logged_job + 1);
}

std::string DescribePast(const DataPast& past) {
  std::vector<std::string> parts;
  if (past.mark) {
    parts.push_back(past.mark_path + " (store " + Hex(past.mark->store_id) + ", " +
                    std::to_string(past.mark->commits) + " commits, job ids up to " +
                    std::to_string(past.mark->next_job_id - 1) + ")");
  } else if (past.has_mark) {
    parts.push_back(past.mark_path + " (unreadable: " + past.mark_error + ")");
  }
  if (past.logged_jobs > 0) {
    parts.push_back("the output of " + std::to_string(past.logged_jobs) + " jobs (ids up to " +
                    std::to_string(past.highest_logged_job) + ") in " + past.logs_dir);
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : " and ") + parts[i];
  return out;
}

std::string DescribeStore(const Identity& id, const Snapshot& snap) {
  return (id.id == 0 ? std::string("no identity") : "store " + Hex(id.id)) + ", " +
         std::to_string(id.commits) + " commits, " + std::to_string(snap.jobs.size()) +
         " jobs, job ids up to " + std::to_string(snap.next_job_id - 1);
}

}  // namespace

std::string EncodeStoreMark(const StoreMark& mark) {
  return std::string(kHeader) + "\nstore " + Hex(mark.store_id) + "\ncommits " +
         std::to_string(mark.commits) + "\nnext_job_id " + std::to_string(mark.next_job_id) + "\n";
}

Result<StoreMark> DecodeStoreMark(std::string_view text) {
  StoreMark mark;
  bool seen[3] = {false, false, false};
  size_t pos = 0;
  int line_no = 0;
  while (auto line = NextLine(text, &pos)) {
    ++line_no;
    if (line->empty() || line->front() == '#') continue;
    size_t space = line->find(' ');
    std::string_view key = line->substr(0, space);
    std::string_view value = space == std::string_view::npos ? "" : line->substr(space + 1);
    int which = key == "store" ? 0 : key == "commits" ? 1 : key == "next_job_id" ? 2 : -1;
    if (which < 0) {
      return Err(InvalidArgument("line " + std::to_string(line_no) + ": unknown key \"" +
                                 std::string(key.substr(0, 40)) + "\""));
    }
    int64_t v = 0;
    uint64_t id = 0;
    auto [end, ec] = which == 0 ? std::from_chars(value.data(), value.data() + value.size(), id, 16)
                                : std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty() ||
        (which == 0 ? id == 0 || id > uint64_t(INT64_MAX) : v < (which == 2 ? 1 : 0))) {
      return Err(InvalidArgument("line " + std::to_string(line_no) + ": " + std::string(key) +
                                 " has a bad value \"" + std::string(value.substr(0, 40)) + "\""));
    }
    if (which == 0) mark.store_id = static_cast<int64_t>(id);
    if (which == 1) mark.commits = v;
    if (which == 2) mark.next_job_id = v;
    seen[which] = true;
  }
  for (int i = 0; i < 3; ++i) {
    if (!seen[i]) {
      return Err(InvalidArgument(std::string("no ") +
                                 (i == 0   ? "store"
                                  : i == 1 ? "commits"
                                           : "next_job_id") +
                                 " line"));
    }
  }
  return mark;
}

DataPast ReadDataPast(const std::string& mark_path, const std::string& logs_dir) {
  DataPast past{.mark_path = mark_path, .logs_dir = logs_dir};
  std::error_code ec;
  if (fs::exists(mark_path, ec)) {
    past.has_mark = true;
    std::ifstream in(mark_path);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      past.mark_error = "cannot be read";
    } else if (auto mark = DecodeStoreMark(text.str().substr(0, 4096)); !mark) {
      past.mark_error = mark.error().message();
    } else {
      past.mark = *mark;
    }
  }
  for (const auto& entry : fs::directory_iterator(logs_dir, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t id = 0;
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (err != std::errc() || end != name.data() + name.size() || id <= 0) continue;
    ++past.logged_jobs;
    past.highest_logged_job = std::max(past.highest_logged_job, id);
  }
  return past;
}

Result<Admission> AdmitStore(const std::string& label, const Identity& identity,
                             const Snapshot& snap, const DataPast& past, StoreStart how) {
  const int64_t past_next = PastNextJobId(past);
  const bool empty = Empty(snap) && identity.id == 0;
  const bool has_past = past.has_mark || past.logged_jobs > 0;
  const std::string ids_go_on = "(job ids go on from " +
                                std::to_string(std::max(snap.next_job_id, past_next)) +
                                ", so none is handed out twice)";
  Admission admit{.give_identity = identity.id == 0, .next_job_id = snap.next_job_id};

  if (how == StoreStart::kNew) {
    if (!empty) {
      return Err(Conflict("--new-store: the store " + label + " is not new (" +
                          DescribeStore(identity, snap) +
                          "); it starts only an empty store: start without --new-store"));
    }
    admit.next_job_id = std::max(snap.next_job_id, past_next);
    return admit;
  }
  if (empty && how == StoreStart::kRestore && has_past) {
    admit.next_job_id = std::max(snap.next_job_id, past_next);
    return admit;  // an empty backup: as --new-store
  }
  if (empty && how != StoreStart::kRestore) {
    if (!has_past) return admit;  // a new data directory: a new store
    return Err(Conflict(
        "the store " + label +
        " is empty, but this data directory has a past: " + DescribePast(past) +
        ". The store was emptied, replaced or lost; nothing was started. Put its files back, "
        "or restore a backup and start once with --restore-store; to start a new, empty store "
        "here deliberately, start once with --new-store " +
        ids_go_on + " (docs/operations.md, \"A lost store is never a new one\")"));
  }

  std::string problem;
  if (past.mark && identity.id != 0 && past.mark->store_id != identity.id) {
    problem = "is not the store this data directory kept: it is store " + Hex(identity.id) +
              ", and " + past.mark_path + " names store " + Hex(past.mark->store_id);
  } else if (past.mark && identity.id == 0) {
    problem = "has no identity (a copy from before baton kept one?), and " + past.mark_path +
              " names store " + Hex(past.mark->store_id);
  } else if (past.mark && identity.commits < past.mark->commits) {
    problem = "is behind this data directory: it holds " + std::to_string(identity.commits) +
              " commits, and " + past.mark_path + " saw " + std::to_string(past.mark->commits) +
              " (a lost write-ahead log, or an older backup)";
  } else if (snap.next_job_id < past_next) {
    problem = "is behind this data directory: it handed out job ids up to " +
              std::to_string(snap.next_job_id - 1) + ", and the directory saw ids up to " +
              std::to_string(past_next - 1) + " (" + DescribePast(past) + ")";
  }
  if (!problem.empty()) {
    if (how != StoreStart::kRestore) {
      return Err(Conflict(
          "the store " + label + " " + problem + "; nothing was started. Put the store's " +
          "missing files back; or, to go on from the store as it is (what it lacks is lost), " +
          "start once with --restore-store " + ids_go_on +
          " (docs/operations.md, \"A lost store is never a new one\")"));
    }
    admit.next_job_id = std::max(snap.next_job_id, past_next);
    return admit;
  }
  if (how == StoreStart::kRestore) {
    return Err(Conflict("--restore-store: the store " + label + " (" +
                        DescribeStore(identity, snap) +
                        ") is not behind this data directory: start without --restore-store"));
  }
  if (past.has_mark && !past.mark) {
    admit.warning = past.mark_path + " could not be read (" + past.mark_error +
                    "); the store was not checked against it, and it is written anew";
  }
  return admit;
}

StoreMarker::~StoreMarker() {
  if (fd_ >= 0) ::close(fd_);
}

Status StoreMarker::Write() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) return Internal("cannot write " + path_ + ": " + std::strerror(errno));
    (void)::fchmod(fd_, 0600);
    // Fixed size: each rewrite covers the whole of the last one.
    if (::ftruncate(fd_, static_cast<off_t>(kRecordBytes)) != 0) {
      int err = errno;
      ::close(fd_);
      fd_ = -1;
      return Internal("cannot write " + path_ + ": " + std::strerror(err));
    }
  }
  Identity id = store_.identity();
  std::string record =
      EncodeStoreMark({.store_id = id.id, .commits = id.commits, .next_job_id = next_job_id_});
  record.resize(kRecordBytes, '\n');
  ssize_t n = ::pwrite(fd_, record.data(), record.size(), 0);
  if (n != static_cast<ssize_t>(record.size())) {
    return Internal("cannot write " + path_ + ": " +
                    (n < 0 ? std::strerror(errno) : std::string("short write")));
  }
  return Status::Ok();
}

void StoreMarker::Committed(const Batch& batch) {
  if (batch.next_job_id) next_job_id_ = std::max(next_job_id_, *batch.next_job_id);
  Status st = Write();
  if (!st.ok() && !failing_) {
    LogWarn(st.message() + "; the store's next start checks it against an older mark");
  }
  failing_ = !st.ok();
}

}  // namespace baton::store
