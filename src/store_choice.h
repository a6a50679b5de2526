// Which store a server keeps its state in: `--store` over the configuration file's `store`,
// and opening it (PostgreSQL, or SQLite with its lock and file modes). Used by main.cc only.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "store/store.h"

namespace baton {

// `flag` (--store, "" = not given) over the file's store: a postgres:// URL sets *url, an
// absolute path sets *path (SQLite), clearing the other; anything else is InvalidArgument.
Status ApplyStoreFlag(const std::string& flag, std::string* url, std::string* path);

// PostgreSQL at `url`, else SQLite at `path` ("" = DIR/baton.db).
Result<std::unique_ptr<store::Store>> OpenStore(const std::string& url, const std::string& path,
                                                const std::string& dir);

}  // namespace baton
