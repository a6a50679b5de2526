#include "cli/code.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codec/json_codec.h"

namespace baton::cli {

namespace fs = std::filesystem;

namespace {

// `text` quoted for sh -c.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// What a shell command prints on stdout, and whether it exited 0.
bool Capture(const std::string& command, std::string* out) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return false;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The files git shows in `dir` (tracked and untracked, not ignored); nullopt outside a work
// tree or without git.
std::optional<std::vector<std::string>> GitFiles(const std::string& dir) {
  std::string out;
  if (!Capture(
          "git -C " + Quoted(dir) + " ls-files -z --cached --others --exclude-standard 2>/dev/null",
          &out))
    return std::nullopt;
  std::vector<std::string> files;
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\0', at);
    if (end == std::string::npos) end = out.size();
    std::string name = out.substr(at, end - at);
    struct stat st;
    // Tracked files deleted since are not there to pack.
    if (!name.empty() && lstat((dir + "/" + name).c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
      files.push_back(std::move(name));
    at = end + 1;
  }
  return files;
}

}  // namespace

Result<std::vector<std::string>> CodeFiles(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Err(InvalidArgument("--code: " + dir + " is not a directory"));
  std::vector<std::string> files;
  if (auto git = GitFiles(dir)) {
    files = std::move(*git);
  } else {
    auto it = fs::recursive_directory_iterator(dir, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() == ".git") {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_directory(ec)) files.push_back(fs::relative(it->path(), dir, ec).string());
    }
    if (ec) return Err(InvalidArgument("--code: cannot read " + dir + ": " + ec.message()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::string> UploadCode(ApiClient& api, const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<std::string> files, CodeFiles(dir));
  if (files.empty()) return Err(InvalidArgument("--code: " + dir + " holds no files"));
  int64_t bytes = 0;
  std::string biggest;
  int64_t biggest_size = -1;
  for (const std::string& f : files) {
    std::error_code ec;
    auto size = static_cast<int64_t>(fs::file_size(dir + "/" + f, ec));
    if (ec) continue;  // a link, say: tar packs it as one
    bytes += size;
    if (size > biggest_size) biggest_size = size, biggest = f;
  }
  if (bytes > kMaxCodeBytes) {
    return Err(InvalidArgument("--code: " + dir + " holds " + std::to_string(bytes >> 20) +
                               " MiB, more than " + std::to_string(kMaxCodeBytes >> 20) +
                               " MiB (the largest: " + biggest +
                               "); leave data and checkpoints out, in .gitignore"));
  }
  char list[] = "/tmp/baton-code-XXXXXX";
  int fd = mkstemp(list);
  if (fd < 0) return Err(Internal("--code: cannot make a temporary file"));
  std::string names;
  for (const std::string& f : files) names += f + '\0';
  bool wrote = write(fd, names.data(), names.size()) == static_cast<ssize_t>(names.size());
  close(fd);
  std::string archive;
  bool packed = wrote && Capture("tar -czf - -C " + Quoted(dir) + " --null --no-recursion -T " +
                                     Quoted(list) + " 2>/dev/null",
                                 &archive);
  unlink(list);
  if (!packed) return Err(Internal("--code: tar could not pack " + dir));
  auto body = api.Call("POST", "/v1/code", archive);
  if (!body) return Err(body.error());
  auto id = codec::DecodeCodeId(*body);
  if (!id) return Err(id.error());
  std::cerr << "baton: code snapshot of " << dir << ": " << files.size() << " files, "
            << (archive.size() + 1023) / 1024 << " KiB packed (" << id->substr(0, 12) << ")"
            << std::endl;
  return id;
}

}  // namespace baton::cli
