// Host and user lookups for the statically linked `baton` (docs/architecture.md, "Two
// executables"). A statically linked glibc (2.34 and later) has two sources of the name
// service built in, `files` and `dns`; for any other that /etc/nsswitch.conf names (systemd,
// sss, ldap, myhostname, ...) it would load the source's shared module into a process that
// has no dynamic loader, which crashed (`token create` for a user the files do not know,
// through libnss_systemd). So a lookup whose database names only the built-in sources is
// left to glibc, and any other is asked of `getent`, the C library's own lookup program, which
// is dynamically linked and so loads every module as any program does. The executable's
// wrappers of getaddrinfo and getpwnam (src/client_static.cc) call what is here.
#pragma once

#include <netdb.h>
#include <pwd.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::cli {

// The sources that `conf` (the text of nsswitch.conf) names for `database` ("hosts",
// "passwd"), in order, without their [STATUS=action] terms; glibc's default where no line
// names the database ("dns files" for hosts, "files" for the others).
std::vector<std::string> NameSources(std::string_view conf, std::string_view database);

// Whether a statically linked glibc answers a lookup in `database` by itself: every source
// that the file at `conf_path` names for it is built in (files, dns). A file that is missing
// is glibc's defaults (yes); one that cannot be read, or is larger than 64 KiB, is not known
// (no: getent reads it).
bool StaticLookupWorks(const std::string& conf_path, std::string_view database);

// The addresses in `getent ahosts` output (ADDRESS TYPE [NAME] lines), in order, each once;
// `canonical` gets the name on the first line, if any.
std::vector<std::string> GetentAddresses(std::string_view out, std::string* canonical);

// What `getent` printed on stdout (at most 64 KiB) and its exit status (2: no such key);
// nullopt when it could not be run.
struct GetentAnswer {
  int status = 0;
  std::string out;
};
std::optional<GetentAnswer> RunGetent(const std::vector<std::string>& args);

using GetAddrInfoFn = int (*)(const char*, const char*, const addrinfo*, addrinfo**);
using GetPwNamFn = passwd* (*)(const char*);

// getaddrinfo(3) for the static executable: `real` (glibc's own) where it can answer alone
// (a numeric address, or a host name with only built-in sources for hosts), else the
// addresses of `getent ahosts NAME` (ahostsv4/ahostsv6 for one family), each made into
// addrinfo by `real` as a numeric one. A service must be a port number where the services
// database names other sources (EAI_SERVICE otherwise); Baton's callers always pass one.
int StaticGetAddrInfo(const char* node, const char* service, const addrinfo* hints, addrinfo** res,
                      GetAddrInfoFn real, const std::string& conf_path);

// getpwnam(3) for the static executable: `real` where the passwd sources are built in, else
// `getent passwd NAME`'s line, kept in static storage as getpwnam's is. Null: no such user
// (errno 0), or getent failed (errno EIO).
passwd* StaticGetPwNam(const char* name, GetPwNamFn real, const std::string& conf_path);

}  // namespace baton::cli
