// Which store a server keeps its state in: `--store` over the configuration file's `store`,
// and opening it (PostgreSQL, or SQLite with its lock and file modes). Used by server/ and main.cc.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "store/store.h"
#include "store/store_mark.h"

namespace baton::server {

// `flag` (--store, "" = not given) over the file's store: a postgres:// URL sets *url, an
// absolute path sets *path (SQLite), clearing the other; anything else is InvalidArgument.
Status ApplyStoreFlag(const std::string& flag, std::string* url, std::string* path);

// PostgreSQL at `url`, else SQLite at `path` ("" = DIR/baton.db).
Result<std::unique_ptr<store::Store>> OpenStore(const std::string& url, const std::string& path,
                                                const std::string& dir);

// The store's name in messages: its file, or its URL without the password.
std::string StoreLabel(const std::string& url, const std::string& path, const std::string& dir);

struct StoreAdmission {
  store::StoreStart how = store::StoreStart::kCheck;
  std::string dir;       // the data directory: its store.mark
  std::string logs_dir;  // where job output is kept: ids seen
  std::string label;     // StoreLabel
};

// Checks the store that *snap was loaded from against the data directory's past
// (store/store_mark.h): gives a new store its identity, moves next_job_id past every id the
// directory saw (committed), and writes the mark; returns the marker the loop keeps it with.
// An error says what was found and how to proceed; nothing was changed then.
Result<std::unique_ptr<store::StoreMarker>> AdmitStore(const StoreAdmission& a, store::Store& store,
                                                       store::Snapshot* snap);

}  // namespace baton::server
