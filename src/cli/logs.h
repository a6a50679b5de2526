// `baton logs ID [-f] [--node NAME]`: a job's output. A job on one node prints as it was
// written; a job on several nodes prints every node's output, rank by rank, each line behind
// "[NODE rank R] " (as `srun --label` tells ranks apart), and `--node` picks one node's output
// unlabelled. With -f the output is printed as it comes until the job has ended and its last
// bytes are out; several nodes are followed at once, a whole line at a time.
#pragma once

#include <cstdint>
#include <string>

#include "cli/client.h"

namespace baton::cli {

// `ref`: "12", or "12_7" for a task of an array.
int Logs(const Connection& conn, const std::string& ref, bool follow, const std::string& node);

// Prefixes every whole line of `data` with `label`; an unfinished last line waits in `partial`
// for the rest (or for Flush at the end). Exposed for tests.
class LineLabeler {
 public:
  explicit LineLabeler(std::string label) : label_(std::move(label)) {}
  std::string Add(std::string_view data);
  std::string Flush();

 private:
  std::string label_;
  std::string partial_;
};

}  // namespace baton::cli
