#include "api/code_store.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "api/auth.h"
#include "core/file_util.h"
#include "core/job.h"

namespace baton::api {

Result<std::string> CodeStore::Put(std::string_view archive) {
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
  if (Has(id)) return id;
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    return Err(Internal("code: cannot create " + dir_ + ": " + std::strerror(errno)));
  RETURN_IF_ERROR(WriteFileAtomic(PathOf(id), archive, WriteFileOptions{.mode = 0600}));
  return id;
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
  struct stat st;
  return IsCodeId(id) && ::stat(PathOf(id).c_str(), &st) == 0;
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
