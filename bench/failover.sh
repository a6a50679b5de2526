#!/usr/bin/env bash
# Failover under load (issue 18, docs/operations.md "High availability"): three `baton server`s
# on one PostgreSQL (a throwaway one, scripts/local-postgres), a steady stream of submits
# through the command line given all three addresses, then kill -9 of the leader. Each round
# prints the time from the kill to the acknowledgement of the first submit sent after it (by
# the new leader: the command line tries the dead one, then the next), and checks that
# every acknowledged job is in the new leader's store.
#   bench/failover.sh [BUILD_DIR (build/release)] [ROUNDS (5)] [LEASE_TTL (3s)]
set -euo pipefail
cd "$(dirname "$0")/.."
baton=$(realpath "${1:-build/release}/baton")
rounds=${2:-5}
ttl=${3:-3s}
work=$(mktemp -d /tmp/baton-failover-XXXXXX)
chmod 755 "$work"  # PostgreSQL runs as postgres under root
port=$((20000 + RANDOM % 20000))
base=$(scripts/local-postgres start "$work/pg" "$port")
cleanup() {
  pkill -9 -f "$work/r" 2>/dev/null || true
  scripts/local-postgres stop "$work/pg" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }
results=()
for r in $(seq 1 "$rounds"); do
  db="r$r"
  psql -qX "${base%/*}/postgres" -c "CREATE DATABASE $db" >/dev/null
  urls=""
  pids=()
  for i in 0 1 2; do
    dir="$work/r$r/c$i"
    mkdir -p "$dir"
    # The same tokens and the same TLS CA in every controller's directory.
    if ((i > 0)); then
      cp -p "$work/r$r/c0/admin.token" "$work/r$r/c0/agent.token" "$dir/"
      mkdir -p "$dir/tls" && cp -p "$work/r$r/c0/tls/ca.crt" "$work/r$r/c0/tls/ca.key" "$dir/tls/"
    fi
    "$baton" server --data "$dir" --listen 127.0.0.1:0 --store "${base%/*}/$db" \
      --lease-ttl "$ttl" >"$dir.log" 2>&1 &
    pids+=($!)
    disown $!
    until [[ -s $dir/server.url ]]; do sleep 0.05; done
    urls+="${urls:+,}$(cat "$dir/server.url")"
  done
  export BATON_SERVER=$urls BATON_TOKEN=$(cat "$work/r$r/c0/admin.token")
  export BATON_TLS_CA=$work/r$r/c0/tls/ca.crt
  acks="$work/r$r/acks"
  : >"$acks"
  (while true; do
    sent=$(now_ms)
    if id=$("$baton" submit --hold -- true 2>/dev/null); then echo "$sent $(now_ms) $id" >>"$acks"; fi
  done) &
  load=$!
  until (($(wc -l <"$acks") >= 20)); do sleep 0.05; done
  killed=$(now_ms)
  kill -9 "${pids[0]}"
  before=$(wc -l <"$acks")
  until (($(wc -l <"$acks") >= before + 20)); do sleep 0.05; done
  kill "$load"
  wait "$load" 2>/dev/null || true
  # The first submit sent after the kill (one sent before may be answered by the old leader).
  first=$(awk -v k="$killed" '$1 > k {print $2; exit}' "$acks")
  gap=$((first - killed))
  # Every acknowledged id is in the store the new leader serves.
  listed=$("$baton" jobs --state held --json | grep -o '"id":[0-9]*' | sort -u | wc -l)
  acked=$(awk '{print $3}' "$acks" | sort -u | wc -l)
  echo "round $r: first submit acknowledged ${gap} ms after kill -9; acknowledged $acked, held in the store $listed"
  [[ $listed -ge $acked ]] || { echo "LOST: $((acked - listed)) acknowledged jobs" >&2; exit 1; }
  results+=("$gap")
  kill "${pids[@]:1}" 2>/dev/null || true
  wait 2>/dev/null || true
done
sorted=($(printf '%s\n' "${results[@]}" | sort -n))
echo "failover over $rounds rounds (lease ttl $ttl): min ${sorted[0]} ms, median ${sorted[$((rounds / 2))]} ms, max ${sorted[-1]} ms"
