#!/usr/bin/env bash
# A baton server's resident memory before, during and after a flood of 20,000 idle
# connections that each send one byte (two processes of 10,000, held 20 s), as in
# docs/performance.md ("Safe to share"). Run against a Release build:
#   bench/flood-memory.sh build/release/baton
set -u
B=${1:?usage: $0 PATH/TO/baton}
here=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d)
"$B" up --data "$D" --listen 127.0.0.1:0 --gpus 1xH100-80GB >"$D/out" 2>&1 &
UP=$!  # baton execs batond: the same process
for _ in $(seq 100); do [ -s "$D/server.url" ] && break; sleep 0.1; done
PORT=$(sed 's/.*://' "$D/server.url")
rss() { awk '/VmRSS/ {printf "%.1f MB", $2 / 1024}' "/proc/$UP/status"; }
fds() { ls "/proc/$UP/fd" | wc -l; }
sleep 2
echo "before: $(rss)"
python3 "$here/flood.py" "$PORT" 10000 20 & F1=$!
python3 "$here/flood.py" "$PORT" 10000 20 & F2=$!
sleep 15
echo "during: $(rss), $(fds) descriptors"
wait $F1 $F2
sleep 1
echo "1 s after: $(rss), $(fds) descriptors"
sleep 59
echo "60 s after: $(rss)"
kill $UP
wait $UP 2>/dev/null
rm -rf "$D"
