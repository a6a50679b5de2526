#include "api/code_store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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
  std::string id = Sha256Hex(archive);
  if (Has(id)) return id;
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    return Err(Internal("code: cannot create " + dir_ + ": " + std::strerror(errno)));
  RETURN_IF_ERROR(WriteFileAtomic(PathOf(id), archive, WriteFileOptions{.mode = 0600}));
  return id;
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
