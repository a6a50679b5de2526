// Slurm's host lists: "gpu[01-03,07],login1", as SLURM_JOB_NODELIST gives them and
// `scontrol show hostnames` expands them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace baton {

// The compressed form of `names`, in their order: a run of names that differ only in a number
// at their end, ascending and of one width, becomes PREFIX[A-B,C] ("n1,n2,n3,n5" ->
// "n[1-3,5]"; "gpu07,gpu08" -> "gpu[07-08]"). Expanding it gives `names` back, in order, so
// its first name is still rank 0's.
std::string CompressHostList(const std::vector<std::string>& names);

// The names of a host list, in order: "a[1-3,7]b,c" -> a1b a2b a3b a7b c. Zero-padded ranges
// keep their width ("[08-10]" -> 08 09 10). At most `max_names` of them, else an error; a bad
// list is an error naming what is wrong.
Result<std::vector<std::string>> ExpandHostList(std::string_view list, size_t max_names = 100000);

}  // namespace baton
