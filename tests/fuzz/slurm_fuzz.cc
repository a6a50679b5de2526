// Fuzz target: what Slurm's side of Baton reads (issue 38): host lists (an accepted list
// compresses and expands back to itself), #SBATCH lines and their options, and a step
// server's request (read from a pipe, as from a connection: bounded, never a crash).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "cli/sbatch.h"
#include "core/hostlist.h"
#include "core/splice.h"
#include "core/step_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (auto names = baton::ExpandHostList(text, 4096)) {
    auto back = baton::ExpandHostList(baton::CompressHostList(*names), 4096);
    if (!back || *back != *names) std::abort();
  }
  if (auto words = baton::cli::SplitDirective(text)) {
    std::vector<std::string> notes;
    for (size_t i = 0; i + 1 < words->size(); i += 2)
      (void)baton::cli::TranslateSbatchOption((*words)[i], (*words)[i + 1], true, &notes);
  }
  int fds[2];
  if (size <= 60000 && pipe2(fds, O_CLOEXEC) == 0) {
    // The magic first, so that the fuzzer reaches the fields.
    std::string request = std::string(baton::slurm::kMagic) + text;
    std::thread writer([&] {
      (void)baton::WriteAllTo(fds[1], request);
      close(fds[1]);
    });
    auto r = baton::slurm::ReadRequest(fds[0]);
    if (r && r->verb == "run" && r->argv.empty()) std::abort();
    // Whatever is left unread (a request ends early): drained so the writer ends.
    char sink[4096];
    while (read(fds[0], sink, sizeof sink) > 0) {
    }
    writer.join();
    close(fds[0]);
  }
  return 0;
}
