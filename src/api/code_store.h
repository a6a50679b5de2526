// Code snapshots (`baton submit --code DIR`): the gzipped tar archives users upload
// (POST /v1/code), kept under DIR/<sha256>.tar.gz, named by their SHA-256, written whole and
// fsynced before their id is answered, so that a job that names one never names a snapshot
// that a crash lost. The same snapshot uploaded twice is kept once. Blocking file I/O, on the
// HTTP threads, as the log store's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace baton::api {

class CodeStore {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;  // an archive, compressed
  // What it may unpack to: the CLI's largest snapshot (512 MiB of files) and tar's headers.
  static constexpr uint64_t kMaxUnpackedBytes = uint64_t{1} << 30;

  explicit CodeStore(std::string dir) : dir_(std::move(dir)) {}
  // Keeps `archive` (a gzip stream); its id.
  Result<std::string> Put(std::string_view archive);
  bool Has(const std::string& id) const;
  Result<std::string> Get(const std::string& id) const;

 private:
  static Status CheckWhole(std::string_view archive);
  std::string PathOf(const std::string& id) const { return dir_ + "/" + id + ".tar.gz"; }
  std::string dir_;
};

}  // namespace baton::api
