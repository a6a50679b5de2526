#!/usr/bin/env python3
# Opens N connections to 127.0.0.1:PORT, each sending one byte, holds them HOLD seconds.
import resource, socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
socks, failed = [], 0
for _ in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.send(b"G")
        socks.append(s)
    except OSError:
        failed += 1
print("open", len(socks), "failed", failed, flush=True)
time.sleep(hold)
