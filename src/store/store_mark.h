// A data directory's memory of its store: DATA/store.mark (0600) says which store the
// directory kept and how far that store got. A controller compares it, and the job logs the
// directory holds, with the store it opens, and refuses a store that is empty where the
// directory has a past, one behind what the directory saw (a lost write-ahead log, an older
// backup) or another cluster's, saying what it found and which flag proceeds deliberately
// (docs/operations.md, "A lost store is never a new one").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "store/identity.h"
#include "store/store.h"

namespace baton::store {

struct StoreMark {
  int64_t store_id = 0;
  int64_t commits = 0;
  int64_t next_job_id = 1;  // ids below it were handed out
  bool operator==(const StoreMark&) const = default;
};

std::string EncodeStoreMark(const StoreMark& mark);
// InvalidArgument naming what is wrong, for anything but EncodeStoreMark's form.
Result<StoreMark> DecodeStoreMark(std::string_view text);

// What a data directory shows of its past before a store is admitted.
struct DataPast {
  bool has_mark = false;            // the mark file exists
  std::optional<StoreMark> mark;    // it could be read
  std::string mark_error;           // why not, where it exists and could not be read
  int64_t logged_jobs = 0;          // job directories in the logs directory
  int64_t highest_logged_job = 0;   // the highest of their ids; 0 = none
  std::string mark_path, logs_dir;  // for messages
};
DataPast ReadDataPast(const std::string& mark_path, const std::string& logs_dir);

// How the operator started the controller.
enum class StoreStart {
  kCheck,    // no flag: admit only a store that continues this directory's past
  kNew,      // --new-store: an empty store in a directory with a past, deliberately
  kRestore,  // --restore-store: a store behind the directory's past (a backup), deliberately
};

struct Admission {
  bool give_identity = false;  // the store has no id yet: give it one
  int64_t next_job_id = 1;     // the first id to hand out; above the store's, it is committed
  std::string warning;         // to log, when something could not be checked
};

// Whether the store `label` (its identity and contents `snap`) may serve from a data directory
// with `past`. An error (Conflict) says what was found, that nothing was started, and how to
// proceed. Ids are never handed out twice: next_job_id is past every id the directory saw.
Result<Admission> AdmitStore(const std::string& label, const Identity& identity,
                             const Snapshot& snap, const DataPast& past, StoreStart how);

// Keeps the mark up to date: after each batch the store committed, the mark is rewritten in
// place, one pwrite of a fixed-size record, without an fsync: 3 us, where a write and rename
// took 600 us on ext4 (docs/performance.md). It is written only after its store's commit, so
// it never runs ahead of the store; one that lags or is torn after a crash of the machine only
// weakens the next start's check (a torn one is unreadable: a warning, and written anew).
class StoreMarker {
 public:
  static constexpr size_t kRecordBytes = 512;  // the encoded mark, padded with newlines

  StoreMarker(std::string path, const Identified& store, int64_t next_job_id)
      : path_(std::move(path)), store_(store), next_job_id_(next_job_id) {}
  ~StoreMarker();
  StoreMarker(const StoreMarker&) = delete;
  StoreMarker& operator=(const StoreMarker&) = delete;
  // Writes the mark now (opening the file, mode 0600, on the first call); an error names it.
  Status Write();
  // After `batch` was committed. A failure (a full disk) is logged once, not fatal.
  void Committed(const Batch& batch);

 private:
  std::string path_;
  const Identified& store_;
  int64_t next_job_id_;
  int fd_ = -1;
  bool failing_ = false;
};

}  // namespace baton::store
