// Writing a whole file so that readers see the old contents or the new, never a torn file:
// the one implementation behind `baton up`'s server.url and the agent's Env (agent/env.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace baton {

struct WriteFileOptions {
  mode_t mode = 0644;
  // fsync the file before the rename and its directory after it, so that the new contents
  // survive a crash of the machine, not only of the process. Costs two disk flushes
  // (milliseconds on some disks).
  bool sync = true;
};

// Writes `contents` to `path` + ".tmp", then renames it over `path`. An error names the path
// and the failing step; the temporary file is removed on failure.
Status WriteFileAtomic(const std::string& path, std::string_view contents,
                       WriteFileOptions options = {});

// OK when `path` is missing or only its owner may read it (no group or other bits); else
// PermissionDenied naming the file, `what` it holds, its mode and the chmod that fixes it.
Status CheckPrivate(const std::string& path, const std::string& what);

}  // namespace baton
