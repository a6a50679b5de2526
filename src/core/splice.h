// Bytes over descriptors: whole writes and reads (retried on EINTR, the one implementation of
// each), and copying both ways between two connected sockets: the relay of a tunnel in the
// controller (api/relay.h), its agent's end (a job's session or port) and the CLI's
// `baton forward`.
#pragma once

#include <cstddef>
#include <string_view>

namespace baton {

// Copies what `a` sends to `b` and what `b` sends to `a` until both directions have ended (an
// end of one direction is passed on as a half close, which HTTP clients rely on), either side
// fails, or `stop_fd` (-1: none) becomes readable. Blocking: run it on a thread of its own.
// `a_early` is sent to `b` first (bytes read from `a` before the splice began). Closes neither
// descriptor.
void Splice(int a, int b, int stop_fd = -1, std::string_view a_early = {});

// Writes all of `data` to `fd` (a socket without SIGPIPE, or any other descriptor; waiting
// while a non-blocking one is full); false on failure.
bool WriteAllTo(int fd, std::string_view data);

// Reads exactly `size` bytes from `fd` into `data`; false on an error or an early end.
bool ReadExactFrom(int fd, void* data, size_t size);

}  // namespace baton
