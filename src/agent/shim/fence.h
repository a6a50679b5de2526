// The fence (docs/architecture.md, "Never two copies of a job"). The agent keeps a lease in
// its run directory (run/lease: "DEADLINE GRACE", in CLOCK_BOOTTIME milliseconds) that it
// moves on each time it reaches a controller. Once the deadline passes, the shim stops its
// job (SIGTERM to its group, SIGKILL GRACE later) whether or not the agent is alive to do it.
#pragma once

#include <sys/types.h>

// Arms the fence for the job's process group: the lease beside the status file, looked at
// every second (SIGALRM) until the shim exits. No lease file: no fence.
void ArmFence(const char* status_path, pid_t group);
// Whether the fence has stopped the job.
bool Fenced();
