// Slurm accounting records as a `baton sim` trace, and traces written back as the CSV of
// PRODUCT.md §6, so a site can replay its own cluster's history (`sacct -P` on the way in,
// the CSV to edit and share on the way out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/trace_job.h"

namespace baton::sim {

// Allocations ParseSacct read but left out of the trace, for a summary line.
struct SacctSkipped {
  int64_t steps = 0;          // "123.batch", "123.0", "123.extern": parts of an allocation
  int64_t never_started = 0;  // Start Unknown or None (pending, cancelled while pending)
  int64_t running = 0;        // End Unknown: no duration yet
  int64_t without_gpus = 0;   // CPU-only allocations
};

// Parses the output of
//   sacct --parsable2 --allusers --format=JobID,JobName,User,Account,Partition,Submit,Start,End,
//         State,AllocTRES,Timelimit,Priority,NNodes
// (`--parsable`, with a '|' ending each line, too). The header line names the fields, in any
// order; fields Baton does not use are ignored. Required: JobID, Submit, End, Start or Elapsed,
// and one of AllocTRES, ReqTRES, AllocGRES (the first not empty in a row counts).
//
// One job per allocation that ran and held GPUs: array tasks ("123_4") and heterogeneous
// components ("123+0") are allocations; steps are skipped. submit is Submit after the earliest
// Submit of the jobs returned; duration End - Start (or Elapsed, where the file has no Start;
// then 00:00:00 counts as never started); gpus the gres/gpu total over NNodes (or TRES node=)
// nodes, which must divide it evenly; gpu_type the TYPE of gres/gpu:TYPE where that is a Baton
// GPU type (A100, H100-80GB, ...); user User and project Account, characters other than
// [A-Za-z0-9._-] made '_'; time_limit Timelimit (UNLIMITED, Partition_Limit and over 366 days:
// none); priority normal (Slurm's numbers do not map onto Baton's classes).
//
// Times are read as written: sacct prints local time without a zone, so a daylight-saving
// change inside the file shifts later submits by an hour. Errors name the file, line and field;
// a file with no job that ran with GPUs is an error. `skipped`, when given, receives the counts.
Result<std::vector<TraceJob>> ParseSacct(std::string_view text, std::string_view file,
                                         size_t max_jobs = 10'000'000,
                                         SacctSkipped* skipped = nullptr);

// Whether `header_line` (a trace's first line) is sacct's: '|'-separated with a JobID field.
bool IsSacctHeader(std::string_view header_line);

// The trace as the CSV ParseTraceCsv reads back to equal jobs (but `line`):
//   submit_time,duration,gpus,nodes,name,user,project,gpu_type,time_limit
// then priority where any job's is not normal, and preemptible where any job chose (empty for
// one that did not: a batch job's default, preemptible). Times are seconds with up to three
// decimals; a time_limit of none is empty.
std::string TraceCsv(const std::vector<TraceJob>& jobs);

}  // namespace baton::sim
