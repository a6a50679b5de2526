#include "core/release_memory.h"

#include <malloc.h>

// gperftools' C entry point, present when tcmalloc is linked in (batond in Release); a weak
// reference, so that a build without it (the sanitizers bring their own allocator) links too.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace baton {

void ReleaseFreeMemory() {
  if (MallocExtension_ReleaseFreeMemory != nullptr) {
    MallocExtension_ReleaseFreeMemory();
  } else {
    malloc_trim(0);  // glibc: the free pages of every arena
  }
}

}  // namespace baton
