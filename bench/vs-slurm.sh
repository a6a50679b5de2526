#!/usr/bin/env bash
# Baton against Slurm on this machine, side by side, in one run (issue 20).
#
#   bash bench/vs-slurm.sh [--jobs N] [--runs N] [--latency-jobs N] [--rest-jobs N]
#                          [--rest-conns N] [--only LIST] [--skip-install]
#
# Installs Debian's Slurm (22.05 on Debian 12) when missing, starts a throwaway one-node Slurm
# cluster with 8 GPUs (gres/gpu, dummy devices) and `baton up` with 8 simulated GPUs, each on a
# fresh directory under one temporary directory, and measures what a user of each would see:
#
#   1. CLI submits: a shell loop of --jobs one-process-per-job submits of a held one-GPU `true`
#      (held, so that the loop measures the command line and the controller, not running jobs);
#   2. end to end: the same loop not held, then waiting until every job has ended; and the
#      same --jobs one-GPU `true` tasks as one job array, until every task has ended;
#   3. submit to running: --latency-jobs jobs one after another on the idle cluster, each
#      `date +%s%N > FILE`; the job's clock minus the shell's clock just before the submit;
#   4. REST submits: held jobs over --rest-conns keep-alive connections, baton_load for Baton,
#      an embedded Python client of slurmrestd for Slurm;
#   and the floor of 1 and 2 on this machine: the same loops of a C program that sends the
#   same request and nothing else (bench/submit_floor.c), against the same `baton up`.
#
# --only cli,e2e,array,floor,latency,rest measures only those (all by default).
#
# It needs root (slurmd starts jobs as their users; apt-get) and the Release build (make build).
# Each --runs repetition starts both systems afresh, and alternates which of the two goes
# first in every pair of measurements; before each side it waits (up to 5 s) for the machine to
# be quiet, so that neither pays for work the other left running. Everything it starts is stopped, and its directory
# removed, on exit, failure or Ctrl-C. TMPDIR picks the file system both systems write to.
set -Eeuo pipefail # -E: the ERR trap below names the failing line inside functions too
cd "$(dirname "$0")/.."
repo=$PWD

die() {
  echo "vs-slurm: $*" >&2
  exit 1
}
usage() {
  sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

jobs=200 runs=1 lat_jobs=30 rest_jobs=20000 rest_conns=16 skip_install=0
only=cli,e2e,array,floor,latency,rest
while (($#)); do
  case $1 in
    --jobs | --runs | --latency-jobs | --rest-jobs | --rest-conns)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "$1 needs a positive whole number"
      case $1 in
        --jobs) jobs=$2 ;;
        --runs) runs=$2 ;;
        --latency-jobs) lat_jobs=$2 ;;
        --rest-jobs) rest_jobs=$2 ;;
        --rest-conns) rest_conns=$2 ;;
      esac
      shift 2
      ;;
    --only)
      [[ ${2:-} =~ ^(cli|e2e|array|floor|latency|rest)(,(cli|e2e|array|floor|latency|rest))*$ ]] ||
        die "--only takes a comma-separated list of cli, e2e, array, floor, latency, rest"
      only=$2
      shift 2
      ;;
    --skip-install) skip_install=1 && shift ;;
    -h | --help) usage 0 ;;
    *) echo "vs-slurm: unknown argument $1" >&2 && usage 2 ;;
  esac
done

wanted() { [[ ,$only, == *",$1,"* ]]; }
((jobs <= 10000)) || die "--jobs is at most 10000 (the most tasks of one Baton array)"

# ---- What must be there before anything starts -------------------------------------------
((EUID == 0)) || die "run as root (sudo bash $0): slurmd must be root to start jobs, and missing packages are installed with apt-get"
for f in build/release/baton build/release/batond build/release/baton-shim build/release/bench/baton_load build/release/bench/baton_submit_floor; do
  [[ -x $f ]] || die "$f not found: run make build"
done
((BASH_VERSINFO[0] >= 5)) || die "bash 5 or later needed (EPOCHREALTIME)"

pkgs=(munge slurm-wlm slurmctld slurmd slurm-client slurmrestd python3)
missing=()
for p in "${pkgs[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  ((!skip_install)) || die "missing Debian packages: ${missing[*]} (run without --skip-install)"
  echo "vs-slurm: installing ${missing[*]}"
  # The packaged services are not used: they find no /etc/slurm/slurm.conf and do not start.
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for c in munged slurmctld slurmd slurmrestd sbatch squeue scancel sinfo /usr/bin/python3; do
  command -v "$c" >/dev/null || die "$c not found after installing ${pkgs[*]}"
done

# ---- Clean-up, whatever happens ------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/vs-slurm-XXXXXX")
chmod 755 "$work"   # munged and slurmd check the permissions of the directories above them
started=()          # pids of what this script started, stopped in reverse order
munged_pid=""
slurm_up=0 baton_up=0

stop_pid() { # TERM, then KILL after 10 s; `wait` also reaps our children quietly
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
forget_pid() {
  local keep=() p
  for p in "${started[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  started=("${keep[@]}")
}
cleanup() {
  local rc=$? i
  set +e
  trap - ERR
  # Let no running job outlive its daemon (no slurmstepd left behind); held and pending jobs
  # go with the temporary state directory.
  if ((slurm_up)); then
    timeout 20 scancel --user=root --state=RUNNING 2>/dev/null
    for ((i = 0; i < 50; i++)); do [[ -z $(timeout 5 squeue -h -t RUNNING,COMPLETING 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  ((baton_up)) && timeout 60 "$bin/baton" cancel --all >/dev/null 2>&1
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do stop_pid "${started[i]}"; done
  [[ -n $munged_pid ]] && stop_pid "$munged_pid"
  rm -rf "$work"
  ((rc == 0)) || echo "vs-slurm: failed (exit $rc); everything it started is stopped and $work removed" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "vs-slurm: line $LINENO failed: $BASH_COMMAND" >&2' ERR

# A private copy of the binaries: the build directory may be rebuilt while this runs, and
# `baton up` runs the batond that lies beside it, which starts the baton-shim beside it.
bin=$work/bin
mkdir -p "$bin"
cp build/release/baton build/release/batond build/release/baton-shim build/release/bench/baton_load \
  build/release/bench/baton_submit_floor "$bin/"
B=$bin/baton
F=$bin/baton_submit_floor # the same submit in 30 lines of C (bench/submit_floor.c): the floor

now_us() { printf -v "$1" %s "${EPOCHREALTIME//[!0-9]/}"; } # VAR = bash's clock in us: date +%s%N without a fork
loadavg() { cut -d' ' -f1 /proc/loadavg; }
pause_random() { sleep "0.$(printf %03d $((RANDOM % 1000)))"; }

# ---- munge: Slurm's authentication, one daemon with a key of its own ----------------------
mkdir -p "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 600 "$work/munge/munge.key"
# --force: munged refuses root without it; this one is reached only through its own socket.
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/pid" --seed-file="$work/munge/seed" --log-file="$work/munge/log" \
  --num-threads=4
munged_pid=$(cat "$work/munge/pid")

# ---- Slurm: one node, 8 GPUs, configured for speed ----------------------------------------
free_ports() {
  /usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])'
}

write_slurm_conf() {
  local d=$1 host ctld_port slurmd_port
  host=$(hostname -s)
  read -r ctld_port slurmd_port < <(free_ports)
  [[ -n $slurmd_port ]] || die "could not find two free TCP ports on 127.0.0.1"
  mkdir -p "$d/state" "$d/spool" "$d/dev"
  # slurmd 22.05 wants a gres File= to be a character device: eight with /dev/null's numbers.
  # Nothing is constrained with them (task/none: no device cgroup); they only give each job
  # a GPU index, CUDA_VISIBLE_DEVICES, as real GPUs would.
  for i in 0 1 2 3 4 5 6 7; do mknod "$d/dev/nvidia$i" c 1 3; done
  cat >"$d/gres.conf" <<EOF
# No NVML here: take the eight devices as listed.
AutoDetect=off
NodeName=vsnode Name=gpu File=$d/dev/nvidia[0-7]
EOF
  cat >"$d/slurm.conf" <<EOF
ClusterName=vs
# Everything on loopback, on free ports, run as root.
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
# munge, as every real cluster, but a daemon and a key of our own.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
# Logging costs at thousands of RPCs a second: errors only.
SlurmctldDebug=error
SlurmdDebug=error
# The cheapest plugins: processes tracked through /proc (no cgroup per job, where Baton makes
# one), no CPU binding, no accounting of any kind (no slurmdbd, no sampling of job usage).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobContainerType=job_container/none
MpiDefault=none
SwitchType=switch/none
# GPUs as trackable resources, placed core by core.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
# sched/builtin: plain priority order; the jobs here are alike, so backfill would only add
# its periodic pass over the queue. batch_sched_delay=0: no delay of batch jobs' scheduling
# (default 3 s). No "defer" (it gives up the scheduling attempts of each submit and job end
# for the periodic pass). sched_min_interval is left at its
# default of 2 us (sched/builtin's own parser would read "sched_min_interval=0" as its
# "interval=0" and complain). What no parameter changed: a submit only tests a batch job
# (sbatch never starts one), and in slurmctld's log (debug3) jobs started only in the passes
# of its background thread, which wakes once a second, not when a job ended. So a job waits
# up to a second to start, and 8 GPUs run at most about 8 short jobs a second
# (sched/backfill with bf_interval=1 gave the same end-to-end time).
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
# High-throughput settings (Slurm's high-throughput guide): ended jobs leave the controller's
# memory after 2 s (squeue and every scheduling pass walk fewer records), and room for the
# REST test's held jobs.
MinJobAge=2
MaxJobCount=200000
# The array test submits --jobs tasks as one array (the default limit is 1,000 tasks).
MaxArraySize=$((jobs + 1))
ReturnToService=2
# The node as Baton's simulated one: 64 CPUs, 512 GiB, 8 GPUs, whatever this machine has.
SlurmdParameters=config_overrides
NodeName=vsnode NodeAddr=127.0.0.1 NodeHostname=$host CPUs=64 RealMemory=524288 Gres=gpu:8 State=UNKNOWN
PartitionName=vs Nodes=vsnode Default=YES MaxTime=INFINITE State=UP
EOF
}

start_slurm() {
  local d=$1 i
  write_slurm_conf "$d"
  export SLURM_CONF=$d/slurm.conf
  slurmctld -D -c >"$d/slurmctld.out" 2>&1 &
  started+=($!)
  slurm_up=1
  slurmd -D -N vsnode >"$d/slurmd.out" 2>&1 &
  started+=($!)
  for ((i = 0; i < 300; i++)); do
    [[ $(sinfo -h -n vsnode -o %T 2>/dev/null) == idle ]] && return 0
    sleep 0.1
  done
  tail -n 20 "$d"/*.log "$d"/*.out >&2 || true
  die "the Slurm node did not come up idle within 30 s (logs above)"
}

stop_slurm() {
  local d=$1 i p
  # Only running jobs are cancelled: scancel sends one RPC per job, which takes minutes for
  # the REST test's held jobs, and those go with the temporary state directory anyway.
  timeout 20 scancel --user=root --state=RUNNING || true
  for ((i = 0; i < 100; i++)); do [[ -z $(squeue -h -t RUNNING,COMPLETING) ]] && break; sleep 0.1; done
  slurm_up=0
  # slurmrestd, slurmd, slurmctld, in the reverse order of their start.
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    p=${started[i]}
    [[ $(ps -o comm= -p "$p" 2>/dev/null) == slurm* ]] || continue
    stop_pid "$p"
    forget_pid "$p"
  done
}

start_baton() {
  local d=$1 i
  "$B" up --data "$d" --listen 127.0.0.1:0 --gpus 8xH100-80GB >"$d.log" 2>&1 &
  baton_pid=$!
  started+=("$baton_pid")
  baton_up=1
  export BATON_HOME=$d # where the CLI and baton_load find server.url and admin.token
  for ((i = 0; i < 300; i++)); do
    [[ -s $d/server.url ]] && grep -q "joined with 8 GPUs" "$d.log" && return 0
    sleep 0.1
  done
  tail -n 20 "$d.log" >&2 || true
  die "baton up did not serve with its 8 GPUs within 30 s (log above)"
}

stop_baton() {
  timeout 120 "$B" cancel --all >/dev/null 2>&1 || true
  baton_up=0
  stop_pid "$baton_pid"
  forget_pid "$baton_pid"
}

# ---- The commands compared ----------------------------------------------------------------
slurm_held=(sbatch --parsable --hold --gres=gpu:1 -o /dev/null --wrap true)
baton_held=("$B" submit --hold -g 1 -- true)
slurm_run=(sbatch --parsable --gres=gpu:1 -o /dev/null --wrap true)
baton_run=("$B" submit -g 1 -- true)
floor_held=("$F")
slurm_array=(sbatch --parsable --array="0-$((jobs - 1))" --gres=gpu:1 -o /dev/null --wrap true)
baton_array=("$B" submit --array "0-$((jobs - 1))" -g 1 -- true)
floor_run=("$F" --run)

# ---- 1. CLI submit loop, held -------------------------------------------------------------
cli_slurm() {
  local t0 t1 i
  now_us t0
  for ((i = 0; i < jobs; i++)); do "${slurm_held[@]}"; done >"$run_dir/slurm-held.ids"
  now_us t1
  scancel --user=root --state=PENDING
  rate slurm_cli "$t0" "$t1"
}
cli_held() { # KEY COMMAND...: a loop of COMMAND (a held submit), then cancel them all
  local key=$1 t0 t1 i
  shift
  now_us t0
  for ((i = 0; i < jobs; i++)); do "$@"; done >"$run_dir/$key.ids"
  now_us t1
  "$B" cancel --all >/dev/null
  rate "$key" "$t0" "$t1"
}
cli_baton() { cli_held baton_cli "${baton_held[@]}"; }
# The floor: the same loop of a C program that sends the same request and nothing else.
cli_floor() { cli_held floor_cli "${floor_held[@]}"; }
rate() { # NAME T0 T1: jobs per second
  local r
  r=$(awk -v n="$jobs" -v us=$(($3 - $2)) 'BEGIN { printf "%.1f", n / (us / 1e6) }')
  results[$1]+="$r "
  printf '  %-28s %s submits/s  (%d in %s s, load %s)\n' "$1" "$r" "$jobs" \
    "$(awk -v us=$(($3 - $2)) 'BEGIN { printf "%.2f", us / 1e6 }')" "$(loadavg)"
}

# ---- 2. End to end ------------------------------------------------------------------------
# Slurm: `squeue -h` every 20 ms until it prints nothing (no job pending, running or
# completing). `sbatch --wait` on a last job depending on the others would need one more
# scheduling pass (up to a second), so polling is the fairer to Slurm.
# Baton: `baton wait FIRST-LAST`, as a user would type it (the server answers its long-poll
# when the last job has ended); and, to compare like with like, `baton jobs` every 20 ms until
# it lists nothing.
seconds() {
  local s
  s=$(awk -v us=$(($3 - $2)) 'BEGIN { printf "%.2f", us / 1e6 }')
  results[$1]+="$s "
  printf '  %-28s %s s  (%d jobs, %s, load %s)\n' "$1" "$s" "$jobs" "$4" "$(loadavg)"
}
e2e_slurm() {
  local t0 t1 i
  now_us t0
  for ((i = 0; i < jobs; i++)); do "${slurm_run[@]}"; done >"$run_dir/slurm-e2e.ids"
  while [[ -n $(squeue -h) ]]; do sleep 0.02; done
  now_us t1
  seconds slurm_e2e "$t0" "$t1" "node $(sinfo -h -n vsnode -o %T) after"
}
e2e_wait() { # KEY COMMAND...: a loop of COMMAND, then baton wait FIRST-LAST as a user types it
  local key=$1 t0 t1 i first last st=0
  shift
  now_us t0
  for ((i = 0; i < jobs; i++)); do "$@"; done >"$run_dir/$key.ids"
  first=$(head -n1 "$run_dir/$key.ids")
  last=$(tail -n1 "$run_dir/$key.ids")
  "$B" wait "$first-$last" || st=$?
  now_us t1
  seconds "$key" "$t0" "$t1" "baton wait exit $st"
  ((st == 0)) || die "baton wait: some of jobs $first-$last did not succeed"
}
e2e_baton() { e2e_wait baton_e2e_wait "${baton_run[@]}"; }
e2e_floor() { e2e_wait floor_e2e_wait "${floor_run[@]}"; } # the floor's loop
e2e_baton_poll() {
  local t0 t1 i
  now_us t0
  for ((i = 0; i < jobs; i++)); do "${baton_run[@]}"; done >"$run_dir/baton-e2e-poll.ids"
  while [[ $("$B" jobs --json) != '{"jobs":[]'* ]]; do sleep 0.02; done
  now_us t1
  seconds baton_e2e_poll "$t0" "$t1" "polled"
}

# ---- 2b. An array end to end ----------------------------------------------------------------
# --jobs tasks of one-GPU `true` as one job array: the submit, then until every task has ended
# (Slurm: squeue -h empty, polled every 20 ms; Baton: baton wait ARRAY as a user types it).
array_slurm() {
  local t0 t1
  now_us t0
  "${slurm_array[@]}" >"$run_dir/slurm-array.id"
  while [[ -n $(squeue -h) ]]; do sleep 0.02; done
  now_us t1
  seconds slurm_array "$t0" "$t1" "squeue empty"
}
array_baton() {
  local t0 t1 id st=0
  now_us t0
  id=$("${baton_array[@]}")
  "$B" wait "$id" || st=$?
  now_us t1
  seconds baton_array "$t0" "$t1" "baton wait exit $st"
  ((st == 0)) || die "baton wait: some tasks of array $id did not succeed"
}

# ---- 3. Submit to running -----------------------------------------------------------------
# Each submit follows a random pause of 0-1 s: slurmctld starts batch jobs from a loop that
# wakes once a second, and a loop that submits right after the previous job ended would
# otherwise fall at the same (unlucky) phase of it every time.
latency() { # NAME SUBMIT-AND-WAIT-FUNCTION
  local name=$1 fn=$2 i t0 f v=()
  for ((i = 0; i < lat_jobs; i++)); do
    f=$run_dir/$name.$i
    pause_random
    now_us t0
    "$fn" "$f"
    v+=("$(awk -v ns=$(($(cat "$f") - t0 * 1000)) 'BEGIN { printf "%.1f", ns / 1e6 }')")
  done
  local p50 p99 max
  p50=$(pct 0.50 "${v[@]}") p99=$(pct 0.99 "${v[@]}") max=$(pct 1 "${v[@]}")
  results[${name}_p50]+="$p50 " results[${name}_p99]+="$p99 " results[${name}_max]+="$max "
  printf '  %-28s p50 %s ms, p99 %s ms, max %s ms  (%d jobs, load %s)\n' "$name" "$p50" "$p99" "$max" "$lat_jobs" "$(loadavg)"
}
pct() { # P VALUES...: nearest rank, as baton_load
  printf '%s\n' "${@:2}" | sort -g | awk -v p="$1" '{ v[NR] = $1 } END { print v[int(p * (NR - 1) + 0.5) + 1] }'
}
lat_slurm_one() {
  local id
  id=$(sbatch --parsable --gres=gpu:1 -o /dev/null --wrap "date +%s%N > $1")
  until [[ -s $1 ]]; do sleep 0.002; done
  while [[ -n $(squeue -h -j "$id" 2>/dev/null) ]]; do sleep 0.02; done
}
lat_baton_one() {
  local id
  id=$("$B" submit -g 1 -- sh -c "date +%s%N > $1")
  until [[ -s $1 ]]; do sleep 0.002; done
  "$B" wait "$id" >/dev/null
}
lat_slurm() { latency slurm_latency lat_slurm_one; }
lat_baton() { latency baton_latency lat_baton_one; }

# ---- 4. REST submits ----------------------------------------------------------------------
# Slurm's REST daemon: Debian builds 22.05 without libjwt (no auth_jwt.so), so auth/jwt with
# `scontrol token` cannot work; rest_auth/local over a unix socket can (the peer's uid is the
# user). slurmrestd refuses root unless SLURMRESTD_SECURITY=disable_user_check, and its
# default plugin list includes the slurmdbd endpoints, which fail without slurmdbd: -s picks
# the slurmctld ones only. Note what favours Slurm here: a unix socket and no TLS (Baton: HTTPS
# over TCP with a bearer token), and an answer before anything reaches the disk (Baton answers
# after the fsync of the job's transaction; slurmctld saves its state in the background).
write_rest_client() {
  cat >"$work/rest.py" <<'EOF'
# Concurrent keep-alive clients of slurmrestd: POST .../job/submit of held one-GPU `true` jobs.
import http.client, json, os, socket, sys, threading, time

sock_path, version, jobs, conns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
path = f"/slurm/{version}/job/submit"
body = json.dumps({"script": "#!/bin/sh\ntrue\n",
                   "job": {"name": "rest", "hold": True, "gres": "gpu:1",
                           "standard_output": "/dev/null", "current_working_directory": "/tmp",
                           "environment": {"PATH": "/usr/bin:/bin"}}})
headers = {"Content-Type": "application/json"}

class UnixConnection(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost")
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sock_path)

ok, failed, reconnects, lat = [0] * conns, [0] * conns, [0] * conns, [[] for _ in range(conns)]
def worker(i, n):
    c = UnixConnection()
    for _ in range(n):
        t = time.perf_counter()
        c.request("POST", path, body, headers)
        r = c.getresponse()
        d = r.read()
        lat[i].append(time.perf_counter() - t)
        # A held job's answer carries error 2042 "Job is in held state": it was still made.
        if r.status == 200 and json.loads(d).get("job_id", 0) > 0:
            ok[i] += 1
        else:
            failed[i] += 1
            if failed[i] == 1:
                print(f"slurmrestd answered {r.status}: {d[:400]!r}", file=sys.stderr)
        if r.will_close:
            c.close()
            c = UnixConnection()
            reconnects[i] += 1

cpu0, t0 = os.times(), time.perf_counter()
threads = [threading.Thread(target=worker, args=(i, jobs // conns + (i < jobs % conns))) for i in range(conns)]
for t in threads: t.start()
for t in threads: t.join()
dt, cpu1 = time.perf_counter() - t0, os.times()
l = sorted(x for v in lat for x in v)
cpu = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / dt * 100
print(f"submit: {sum(ok)} jobs over {conns} connections in {dt:.2f} s: {sum(ok) / dt:.0f} submits/s; "
      f"ack latency p50 {l[len(l) // 2] * 1e3:.2f} ms, p99 {l[int(0.99 * (len(l) - 1))] * 1e3:.2f} ms; "
      f"failures {sum(failed)}, reconnects {sum(reconnects)}; this client used {cpu:.0f} % of a CPU")
EOF
}
rest_version() { # the newest slurmctld OpenAPI plugin installed: openapi_v0_0_38.so -> v0.0.38
  local f ver=""
  for f in /usr/lib/*/slurm-wlm/openapi_v0_0_*.so /usr/lib/slurm/openapi_v0_0_*.so; do
    [[ -e $f ]] && ver=$(basename "$f" .so | sed 's/^openapi_//; s/_/./g')
  done
  echo "$ver"
}
rest_slurm() {
  local d=$slurm_dir sock ver out i pid
  ver=$(rest_version)
  if [[ -z $ver ]]; then
    echo "  slurm_rest                   n/a: no openapi_v0_0_*.so plugin installed"
    rest_note="no slurmctld OpenAPI plugin found"
    return 0
  fi
  sock=$d/rest.sock
  SLURMRESTD_SECURITY=disable_user_check slurmrestd -s "openapi/$ver" -a rest_auth/local \
    "unix:$sock" >"$d/slurmrestd.log" 2>&1 &
  pid=$!
  started+=("$pid")
  for ((i = 0; i < 100; i++)); do
    [[ -S $sock ]] && /usr/bin/python3 - "$sock" "$ver" <<'EOF' 2>/dev/null && break
import http.client, socket, sys
c = http.client.HTTPConnection("localhost")
c.sock = socket.socket(socket.AF_UNIX); c.sock.connect(sys.argv[1])
c.request("GET", f"/slurm/{sys.argv[2]}/ping")
sys.exit(0 if c.getresponse().status == 200 else 1)
EOF
    sleep 0.1
  done
  if ((i == 100)); then
    rest_note="slurmrestd did not answer /slurm/$ver/ping on $sock: $(tail -n 3 "$d/slurmrestd.log" | tr '\n' ' ')"
    echo "  slurm_rest                   n/a: $rest_note"
    return 0
  fi
  out=$(/usr/bin/python3 "$work/rest.py" "$sock" "$ver" "$rest_jobs" "$rest_conns")
  echo "  slurm_rest ($ver)        $out  (load $(loadavg))"
  results[slurm_rest]+="$(grep -o '[0-9]* submits/s' <<<"$out" | cut -d' ' -f1) "
  stop_pid "$pid"
  forget_pid "$pid"
}
rest_baton() {
  local out
  out=$("$bin/baton_load" submit --jobs "$rest_jobs" --conns "$rest_conns" --held 1)
  echo "  baton_rest                   $out  (load $(loadavg))"
  results[baton_rest]+="$(grep -o '[0-9]* durable submits/s' <<<"$out" | cut -d' ' -f1) "
}

# ---- The runs -----------------------------------------------------------------------------
declare -A results=()
rest_note=""
write_rest_client
# Waits (up to 5 s) until the machine is quiet: under 10 % of one CPU busy over 100 ms. The
# side measured first leaves work behind it (slurmctld goes on cancelling and writing its
# state for a while after `scancel` returns), which the other side's loop would pay for.
settle() {
  local i a b busy total
  for ((i = 0; i < 50; i++)); do
    read -ra a < <(head -1 /proc/stat)
    sleep 0.1
    read -ra b < <(head -1 /proc/stat)
    # user nice system idle iowait irq softirq steal: busy is all but idle and iowait
    total=$(((b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + b[7] + b[8]) - (a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7] + a[8])))
    busy=$((total - (b[4] - a[4]) - (b[5] - a[5])))
    # 100 ms is 10 ticks of one CPU at USER_HZ 100: under 1 tick busy is under 10 %
    ((busy < 1)) && return 0
  done
  echo "  (the machine did not go quiet within 5 s: $busy of $total ticks busy in the last 100 ms)"
}
pair() { # the two sides of one measurement, Slurm first in odd runs, Baton first in even ones
  # (not `"$1" && "$2"`: set -e does not apply inside a function whose status is tested)
  if ((run % 2)); then
    settle
    "$1"
    settle
    "$2"
  else
    settle
    "$2"
    settle
    "$1"
  fi
}

print_header() { # after the first start: sbatch --version needs a configuration
  echo "== Baton vs Slurm, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "slurm:   $(sbatch --version) (Debian $(dpkg-query -W -f='${Version}' slurmctld)), munge $(dpkg-query -W -f='${Version}' munge)"
  echo "baton:   $("$B" --version) ($repo, $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ', with local changes'))"
  echo "work:    $work ($(df -T "$work" | awk 'NR == 2 { print $2 }'))"
  echo "slurm.conf (besides paths and ports): $(grep -v -E '^#|Port=|Location=|Dir=|PidFile=|LogFile=|AuthInfo=' "$slurm_dir/slurm.conf" | paste -sd' ')"
  echo "gres.conf: AutoDetect=off, NodeName=vsnode Name=gpu File=DIR/dev/nvidia[0-7] (character devices 1,3)"
  echo "baton:   baton up --data DIR --listen 127.0.0.1:0 --gpus 8xH100-80GB; BATON_HOME=DIR for the CLI and baton_load"
  echo "commands (baton = $B):"
  printf '  CLI, held:   %s\n               %s\n' "${slurm_held[*]}" "${baton_held[*]}"
  printf '  end to end:  %s; then squeue -h every 20 ms until empty\n' "${slurm_run[*]}"
  printf '               %s; then baton wait FIRST-LAST (and, again, baton jobs --json every 20 ms until empty)\n' "${baton_run[*]}"
  printf '  array:       %s; then squeue -h every 20 ms until empty\n' "${slurm_array[*]}"
  printf '               %s; then baton wait ARRAY\n' "${baton_array[*]}"
  printf '  floor:       %s, and %s then baton wait FIRST-LAST: the same requests from C (bench/submit_floor.c)\n' "${floor_held[*]}" "${floor_run[*]}"
  printf '  latency:     sbatch --parsable --gres=gpu:1 -o /dev/null --wrap "date +%%s%%N > FILE"\n'
  printf '               baton submit -g 1 -- sh -c "date +%%s%%N > FILE"   (a random 0-1 s pause before each)\n'
  printf '  REST:        baton_load submit --jobs %d --conns %d --held 1\n' "$rest_jobs" "$rest_conns"
  printf '               python3 rest.py: %d POST /slurm/VERSION/job/submit (held) over %d keep-alive unix-socket connections to slurmrestd\n' "$rest_jobs" "$rest_conns"
}

for ((run = 1; run <= runs; run++)); do
  run_dir=$work/run$run
  slurm_dir=$run_dir/slurm
  mkdir -p "$slurm_dir"
  start_slurm "$slurm_dir"
  start_baton "$run_dir/baton"
  ((run > 1)) || print_header
  echo
  echo "-- run $run of $runs ($( ((run % 2)) && echo "Slurm" || echo "Baton") first in each pair)"
  # One job each, to check that both run jobs and to warm them up.
  "${slurm_run[@]}" >/dev/null
  while [[ -n $(squeue -h) ]]; do sleep 0.02; done
  "$B" wait "$("${baton_run[@]}")"
  if wanted cli; then pair cli_slurm cli_baton; fi
  if wanted e2e; then
    pair e2e_slurm e2e_baton
    e2e_baton_poll
  fi
  if wanted array; then pair array_slurm array_baton; fi
  if wanted floor; then
    settle
    cli_floor
    settle
    e2e_floor
  fi
  if wanted latency; then pair lat_slurm lat_baton; fi
  # Last: 2 x --rest-jobs held jobs. (Files made and deleted by the thousand slow the next
  # file creations on a journal-less ext4: docs/performance.md, "The file system".)
  if wanted rest; then pair rest_slurm rest_baton; fi
  stop_baton
  stop_slurm "$slurm_dir"
done

# ---- The table ----------------------------------------------------------------------------
summary() { # VALUES...: the median, and the range when there are several
  local s
  s=$(printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (NR == 1) printf "%g", m; else printf "%g (%g-%g)", m, v[1], v[NR] }')
  echo "$s"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
row() { # LABEL SLURM-KEY BATON-KEY UNIT BETTER
  local s b r
  [[ -n ${results[$3]:-} ]] || return 0 # not measured (--only)
  # shellcheck disable=SC2086 # the results are space-separated lists
  if [[ -z ${results[$2]:-} ]]; then
    s="n/a" r="-"
  else
    s=$(summary ${results[$2]})
    r=$(awk -v b="$(median ${results[$3]})" -v s="$(median ${results[$2]})" 'BEGIN { printf "%.2f", b / s }')
  fi
  # shellcheck disable=SC2086
  b=$(summary ${results[$3]})
  printf '%-52s | %-24s | %-24s | %-6s | %s\n' "$1 ($4)" "$s" "$b" "$r" "$5"
}
echo
echo "== Results: $runs run(s) of each on $(nproc) CPUs, median (min-max over runs); ratio = Baton / Slurm of the medians"
printf '%-52s | %-24s | %-24s | %-6s | %s\n' "measurement" "Slurm $(sbatch --version | cut -d' ' -f2)" "Baton $("$B" --version | cut -d' ' -f2)" "ratio" "better"
printf -- '-%.0s' {1..125}
echo
row "CLI submit loop, $jobs held one-GPU true" slurm_cli baton_cli "submits/s" "higher: ratio > 1 is Baton faster"
row "End to end, $jobs one-GPU true (baton wait)" slurm_e2e baton_e2e_wait "s" "lower: ratio < 1 is Baton faster"
row "End to end, $jobs one-GPU true (20 ms polls)" slurm_e2e baton_e2e_poll "s" "lower: ratio < 1 is Baton faster"
row "Array end to end, $jobs one-GPU true tasks (baton wait)" slurm_array baton_array "s" "lower: ratio < 1 is Baton faster"
row "Floor: CLI loop of the C submit, held" slurm_cli floor_cli "submits/s" "what no one-process client beats"
row "Floor: end to end, C submit loop, baton wait" slurm_e2e floor_e2e_wait "s" "what no one-process client beats"
row "Submit to running, $lat_jobs jobs, p50" slurm_latency_p50 baton_latency_p50 "ms" "lower: ratio < 1 is Baton faster"
row "Submit to running, $lat_jobs jobs, p99" slurm_latency_p99 baton_latency_p99 "ms" "lower"
row "Submit to running, $lat_jobs jobs, max" slurm_latency_max baton_latency_max "ms" "lower"
row "REST submits, $rest_jobs held, $rest_conns conns" slurm_rest baton_rest "submits/s" "higher: ratio > 1 is Baton faster"
[[ -z $rest_note ]] || echo "Slurm REST: not measured: $rest_note"
echo "Slurm's end to end polls squeue -h; Baton's first row is baton wait as typed (the server answers its long-poll when the last job has ended), the second polls baton jobs --json every 20 ms like Slurm's."
