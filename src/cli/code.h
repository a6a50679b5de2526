// `--code DIR`: a snapshot of the submitter's code, taken at submit so that edits after it do
// not reach a queued job. The files are what git shows in DIR (tracked and untracked, without
// what .gitignore leaves out) when DIR is in a git work tree, else every file under DIR but
// .git; packed with tar and gzip, uploaded (POST /v1/code), and named in the spec by their
// SHA-256. The job runs in its own copy on each node.
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"

namespace baton::cli {

inline constexpr int64_t kMaxCodeBytes = int64_t{512} << 20;  // the files, before compression

// The files of DIR a snapshot holds, relative to DIR, sorted.
Result<std::vector<std::string>> CodeFiles(const std::string& dir);
// Packs and uploads DIR; the snapshot's id.
Result<std::string> UploadCode(ApiClient& api, const std::string& dir);

}  // namespace baton::cli
