#include "store/libpq.h"

#include <dlfcn.h>

#include <mutex>

namespace baton::store {

#define BATON_LIBPQ_DEFINE(name) decltype(&::name) name = nullptr;
BATON_LIBPQ_FUNCTIONS(BATON_LIBPQ_DEFINE)
#undef BATON_LIBPQ_DEFINE

namespace {

Status Load() {
  // The soname of libpq 10 and later (Debian: the libpq5 package).
  void* lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Unavailable(std::string("PostgreSQL: cannot load libpq.so.5 (") +
                       (why != nullptr ? why : "not found") +
                       "): install PostgreSQL's client library (Debian: apt-get install libpq5)");
  }
  std::string missing;
#define BATON_LIBPQ_RESOLVE(fn)                         \
  fn = reinterpret_cast<decltype(fn)>(dlsym(lib, #fn)); \
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #fn;
  BATON_LIBPQ_FUNCTIONS(BATON_LIBPQ_RESOLVE)
#undef BATON_LIBPQ_RESOLVE
  if (!missing.empty()) {
    return Unavailable("PostgreSQL: libpq.so.5 lacks " + missing +
                       ": libpq 14 or later is needed (pipeline mode)");
  }
  return Status::Ok();
}

}  // namespace

Status LoadLibpq() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] { status = Load(); });
  return status;
}

}  // namespace baton::store
