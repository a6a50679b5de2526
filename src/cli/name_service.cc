#include "cli/name_service.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/text.h"

extern char** environ;

namespace baton::cli {
namespace {

constexpr size_t kMaxRead = 64 * 1024;

// The words of `s`, between blanks.
std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> words;
  for (size_t at = s.find_first_not_of(" \t\r"); at != std::string_view::npos;
       at = s.find_first_not_of(" \t\r", at)) {
    size_t end = s.find_first_of(" \t\r", at);
    words.push_back(s.substr(at, end == std::string_view::npos ? end : end - at));
    at = end;
  }
  return words;
}

// Reads all of `fd`, keeping at most `limit` bytes (the rest is read and dropped, so that a
// writer on the other end of a pipe is never left blocked). False on a read error.
bool ReadAll(int fd, size_t limit, std::string* out, bool* cut) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    size_t room = limit - std::min(limit, out->size());
    if (static_cast<size_t>(n) > room) *cut = true;
    out->append(buf, std::min(room, static_cast<size_t>(n)));
  }
}

bool AllDigits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

bool IsNumericHost(const char* node) {
  unsigned char address[sizeof(in6_addr)];
  return inet_pton(AF_INET, node, address) == 1 || inet_pton(AF_INET6, node, address) == 1;
}

}  // namespace

std::vector<std::string> NameSources(std::string_view conf, std::string_view database) {
  // Every line that names the database counts (glibc reads one; which one has varied between
  // versions): a source on any of them may be asked.
  std::vector<std::string> sources;
  bool named = false;
  size_t pos = 0;
  while (std::optional<std::string_view> next = NextLine(conf, &pos)) {
    std::string_view line = next->substr(0, next->find('#'));
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || Trim(line.substr(0, colon)) != database) continue;
    named = true;
    // Between the sources, [NOTFOUND=return]: what to do after the source before it.
    for (std::string_view rest = line.substr(colon + 1); !rest.empty();) {
      size_t open = rest.find('[');
      for (std::string_view word : Words(rest.substr(0, open))) sources.emplace_back(word);
      size_t close = open == std::string_view::npos ? open : rest.find(']', open);
      rest = close == std::string_view::npos ? std::string_view{} : rest.substr(close + 1);
    }
  }
  if (!named) {
    if (database == "hosts") return {"dns", "files"};
    return {"files"};
  }
  return sources;
}

bool StaticLookupWorks(const std::string& conf_path, std::string_view database) {
  int fd = open(conf_path.c_str(), O_RDONLY | O_CLOEXEC);
  std::string conf;
  if (fd < 0) {
    if (errno != ENOENT) return false;
  } else {
    bool cut = false;
    bool read_all = ReadAll(fd, kMaxRead, &conf, &cut);
    close(fd);
    if (!read_all || cut) return false;
  }
  for (const std::string& source : NameSources(conf, database)) {
    if (source != "files" && source != "dns") return false;
  }
  return true;
}

std::vector<std::string> GetentAddresses(std::string_view out, std::string* canonical) {
  std::vector<std::string> addresses;
  bool first = true;
  size_t pos = 0;
  while (std::optional<std::string_view> line = NextLine(out, &pos)) {
    std::vector<std::string_view> words = Words(*line);
    if (words.empty()) continue;
    if (first && words.size() >= 3 && canonical != nullptr) *canonical = std::string(words[2]);
    first = false;
    if (std::find(addresses.begin(), addresses.end(), words[0]) == addresses.end())
      addresses.emplace_back(words[0]);
  }
  return addresses;
}

std::optional<GetentAnswer> RunGetent(const std::vector<std::string>& args) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  std::vector<char*> argv;
  std::string name = "getent";
  argv.push_back(name.data());
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // Its complaints ("Enumeration not supported") are not the user's: the caller says what
  // failed.
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, "getent", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    errno = spawned;
    return std::nullopt;
  }
  GetentAnswer answer;
  bool cut = false;
  bool read_all = ReadAll(out[0], kMaxRead, &answer.out, &cut);
  int read_error = errno;
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::nullopt;
  }
  if (!read_all) {
    errno = read_error;
    return std::nullopt;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127) {
    errno = ENOENT;  // killed, or the shell's "not found"
    return std::nullopt;
  }
  answer.status = WEXITSTATUS(status);
  return answer;
}

int StaticGetAddrInfo(const char* node, const char* service, const addrinfo* hints, addrinfo** res,
                      GetAddrInfoFn real, const std::string& conf_path) {
  if (service != nullptr && !AllDigits(service) && !StaticLookupWorks(conf_path, "services"))
    return EAI_SERVICE;
  int flags = hints != nullptr ? hints->ai_flags : 0;
  if (node == nullptr || (flags & AI_NUMERICHOST) != 0 || IsNumericHost(node) ||
      StaticLookupWorks(conf_path, "hosts"))
    return real(node, service, hints, res);
  int family = hints != nullptr ? hints->ai_family : AF_UNSPEC;
  const char* database = family == AF_INET    ? "ahostsv4"
                         : family == AF_INET6 ? "ahostsv6"
                                              : "ahosts";
  std::optional<GetentAnswer> answer = RunGetent({database, "--", node});
  if (!answer) return EAI_SYSTEM;
  if (answer->status == 2) return EAI_NONAME;
  if (answer->status != 0) return EAI_FAIL;
  std::string canonical;
  std::vector<std::string> addresses = GetentAddresses(answer->out, &canonical);
  addrinfo numeric{};
  if (hints != nullptr) numeric = *hints;
  numeric.ai_flags = (flags | AI_NUMERICHOST) & ~AI_CANONNAME;
  addrinfo* head = nullptr;
  addrinfo** tail = &head;
  int last = EAI_NONAME;
  for (const std::string& address : addresses) {
    addrinfo* one = nullptr;
    int rc = real(address.c_str(), service, &numeric, &one);
    if (rc != 0) {
      last = rc;
      continue;
    }
    *tail = one;
    while (*tail != nullptr) tail = &(*tail)->ai_next;
  }
  if (head == nullptr) return last;
  if ((flags & AI_CANONNAME) != 0) {
    // freeaddrinfo frees each entry's name with free(3).
    head->ai_canonname = strdup(canonical.empty() ? node : canonical.c_str());
  }
  *res = head;
  return 0;
}

passwd* StaticGetPwNam(const char* name, GetPwNamFn real, const std::string& conf_path) {
  if (StaticLookupWorks(conf_path, "passwd")) return real(name);
  std::optional<GetentAnswer> answer = RunGetent({"passwd", "--", name});
  if (!answer || (answer->status != 0 && answer->status != 2)) {
    errno = EIO;
    return nullptr;
  }
  errno = 0;
  if (answer->status == 2) return nullptr;
  // NAME:PASSWORD:UID:GID:GECOS:DIR:SHELL, as getpwnam's static storage.
  static std::string fields[7];
  static passwd entry;
  std::string_view line(answer->out);
  line = line.substr(0, line.find('\n'));
  for (int i = 0; i < 7; ++i) {
    size_t colon = i < 6 ? line.find(':') : line.size();
    if (colon == std::string_view::npos) {
      errno = EIO;
      return nullptr;
    }
    fields[i] = std::string(line.substr(0, colon));
    line = colon < line.size() ? line.substr(colon + 1) : std::string_view{};
  }
  // `getent passwd 1000` is the user with uid 1000: a name that is all digits is not one.
  if (fields[0] != name) return nullptr;
  if (!AllDigits(fields[2].c_str()) || !AllDigits(fields[3].c_str())) {
    errno = EIO;
    return nullptr;
  }
  entry.pw_name = fields[0].data();
  entry.pw_passwd = fields[1].data();
  entry.pw_uid = static_cast<uid_t>(std::strtoul(fields[2].c_str(), nullptr, 10));
  entry.pw_gid = static_cast<gid_t>(std::strtoul(fields[3].c_str(), nullptr, 10));
  entry.pw_gecos = fields[4].data();
  entry.pw_dir = fields[5].data();
  entry.pw_shell = fields[6].data();
  return &entry;
}

}  // namespace baton::cli
