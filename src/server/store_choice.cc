#include "server/store_choice.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/text.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"

namespace baton::server {

// `--store` over the configuration file's store: a postgres:// URL or an absolute SQLite path.
Status ApplyStoreFlag(const std::string& flag, std::string* url, std::string* path) {
  if (flag.empty()) return Status::Ok();
  if (store::IsPostgresUrl(flag)) {
    *url = flag;
    path->clear();
  } else if (flag[0] == '/') {
    *path = flag;
    url->clear();
  } else {
    return InvalidArgument(
        "--store: a postgres:// URL or an absolute path to a SQLite file, not \"" + flag + "\"");
  }
  return Status::Ok();
}

// The store: PostgreSQL at store.url, else SQLite at DATA/baton.db or store.path.
Result<std::unique_ptr<store::Store>> OpenStore(const std::string& url, const std::string& path,
                                                const std::string& dir) {
  if (!url.empty()) {
    ASSIGN_OR_RETURN(auto pg, store::PostgresStore::Open(url));
    LogInfo("store: PostgreSQL at " + store::RedactPostgresUrl(url));
    return std::unique_ptr<store::Store>(std::move(pg));
  }
  std::string db = path.empty() ? dir + "/baton.db" : path;
  int store_lock = -1;
  if (!path.empty()) {
    // A store outside the data directory: its own lock (two servers with other data
    // directories must not share it), and no one else may read it (jobs' env, token hashes).
    store_lock = open((db + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (store_lock < 0 || flock(store_lock, LOCK_EX | LOCK_NB) != 0) {
      return Err(
          Conflict("another baton already uses the store " + db + " (" + db + ".lock is held)"));
    }
  }
  mode_t old_mask = umask(077);  // the database and its -wal and -shm files: 0600
  auto store = store::SqliteStore::Open(db);
  umask(old_mask);
  if (!store) return Err(store.error());
  for (const char* suffix : {"", "-wal", "-shm"})
    (void)chmod((db + suffix).c_str(), 0600);  // made by an older baton
  return std::unique_ptr<store::Store>(std::move(*store));
}

std::string StoreLabel(const std::string& url, const std::string& path, const std::string& dir) {
  if (!url.empty()) return store::RedactPostgresUrl(url);
  return path.empty() ? dir + "/baton.db" : path;
}

Result<std::unique_ptr<store::StoreMarker>> AdmitStore(const StoreAdmission& a, store::Store& store,
                                                       store::Snapshot* snap) {
  auto* identified = dynamic_cast<store::Identified*>(&store);
  if (identified == nullptr) return Err(Internal("the store keeps no identity"));
  store::DataPast past = store::ReadDataPast(a.dir + "/store.mark", a.logs_dir);
  ASSIGN_OR_RETURN(store::Admission admit,
                   store::AdmitStore(a.label, identified->identity(), *snap, past, a.how));
  if (!admit.warning.empty()) LogWarn(admit.warning);
  if (admit.give_identity) {
    int64_t id = 0;
    while (id == 0) {
      std::string hex = RandomHex(8);
      if (hex.empty()) return Err(Internal("store: no random bytes for the store's id"));
      id = static_cast<int64_t>(std::stoull(hex, nullptr, 16) >> 1);  // positive
    }
    RETURN_IF_ERROR(identified->SetIdentity(id));
  }
  if (admit.next_job_id > snap->next_job_id) {
    RETURN_IF_ERROR(store.Commit(store::Batch{.next_job_id = admit.next_job_id}));
    LogInfo("store: job ids go on from " + std::to_string(admit.next_job_id) +
            ", past every id this data directory saw");
    snap->next_job_id = admit.next_job_id;
  }
  auto marker =
      std::make_unique<store::StoreMarker>(a.dir + "/store.mark", *identified, snap->next_job_id);
  RETURN_IF_ERROR(marker->Write());
  return marker;
}

}  // namespace baton::server
