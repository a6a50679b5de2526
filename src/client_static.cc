// What the statically linked `baton` puts in place of a few C library functions (CMake links
// it with -Wl,--wrap for each; docs/architecture.md, "Two executables"). A static executable
// starts without the dynamic loader's work: a fifth less of a `baton submit`'s instructions.
// Built into `baton` only, and only where it is linked statically.
#include <dlfcn.h>
#include <netdb.h>
#include <pwd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/name_service.h"

namespace {

const std::string kNsswitch = "/etc/nsswitch.conf";

// [from, to) widened to whole pages, made present and writable in one system call rather than
// a page fault at each first touch. Where the kernel lacks it (before Linux 5.14) nothing
// happens and the pages fault in as before.
void Populate(const void* from, const void* to) {
  const uintptr_t page = 4096;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(from) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(to) + page - 1) & ~(page - 1);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

}  // namespace

extern "C" char __data_start[], _end[];  // the writable data and the zeroed (bss), from the linker

namespace {

// Before the C++ runtime's constructors: the writable data (about 30 pages) and the heap's
// first extent (malloc's first brk, about 33), which a `baton submit` otherwise faults in page
// by page: 20 of its faults (docs/performance-history.md, "Functions in the order they run").
// A fault cost 1-2 us on most days of the VM and 20 us on a slow one; the calls, a few us.
void PopulateAtStart(int, char**, char**) {
  Populate(__data_start, _end);
  void* first = std::malloc(1);
  Populate(first, sbrk(0));
  std::free(first);
}

// A static executable runs .preinit_array before .init_array (the constructors).
[[gnu::section(".preinit_array"),
  gnu::used]] void (*const kPopulateAtStart)(int, char**, char**) = PopulateAtStart;

}  // namespace

extern "C" {

int __real_getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                       addrinfo** res);
passwd* __real_getpwnam(const char* name);
hostent* __real_gethostbyname(const char* name);

// Host names: glibc's own lookup where /etc/nsswitch.conf names only the sources it builds in
// (files, dns), `getent ahosts` otherwise (cli/name_service.h). Reached by the HTTP client
// (net/), `baton alloc`'s step connections (core/step_wire.cc) and OpenSSL's BIO_lookup.
int __wrap_getaddrinfo(const char* node, const char* service, const addrinfo* hints,
                       addrinfo** res) {
  return baton::cli::StaticGetAddrInfo(node, service, hints, res, &__real_getaddrinfo, kNsswitch);
}

// Users (`baton token create --user`): glibc's own lookup or `getent passwd`, as above.
passwd* __wrap_getpwnam(const char* name) {
  return baton::cli::StaticGetPwNam(name, &__real_getpwnam, kNsswitch);
}

// Only OpenSSL's deprecated BIO_gethostbyname calls it, which nothing in Baton uses; it may
// not load a module, so it answers only where glibc can alone.
hostent* __wrap_gethostbyname(const char* name) {
  if (baton::cli::StaticLookupWorks(kNsswitch, "hosts")) return __real_gethostbyname(name);
  h_errno = NO_RECOVERY;
  return nullptr;
}

// OpenSSL loads an engine or provider that openssl.cnf names with dlopen. A static executable
// cannot host a shared object built against the shared C library and libcrypto: it fails as
// a missing module would (Debian's openssl.cnf names none; `batond`, linked dynamically,
// takes every client command where a site's configuration needs one).
void* __wrap_dlopen(const char*, int) {
  errno = ENOSYS;
  return nullptr;
}

// The C++ runtime finds the unwind tables of a throw through the executable's
// PT_GNU_EH_FRAME index (linked with --eh-frame-hdr), a binary search. crtbeginT.o, the start
// file of static executables, would also register the tables with libgcc, which then sorts
// every one of them (14 MB of code) at the first throw: 5 ms on `baton --version` (CLI11
// throws to print it). Not registering them leaves the index.
void __wrap___register_frame_info(const void*, void*) {}
void* __wrap___deregister_frame_info(const void*) { return nullptr; }

}  // extern "C"
