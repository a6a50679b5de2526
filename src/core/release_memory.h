// Hands the memory the allocator holds free back to the system: after a flood of connections
// their buffers are freed, but tcmalloc (Release builds) and glibc's malloc keep the pages for
// reuse, so a server's resident memory stays at its peak. Called rarely (api::Connections,
// once a flood has drained); it may take some milliseconds.
#pragma once

namespace baton {

void ReleaseFreeMemory();

}  // namespace baton
