#!/usr/bin/env python3
"""A plain kernel TCP receiver for examples/reno.py: accepts one
connection on ADDR PORT, reads to the end, checks the bytes are the
pattern reno.py sends (byte i = i mod 251) and prints a JSON line:
{"bytes": N, "pattern_ok": true, "seconds": S}."""
import json
import socket
import sys
import time


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(1)
    srv.settimeout(float(sys.argv[3]) if len(sys.argv) > 3 else 120.0)
    conn, _ = srv.accept()
    conn.settimeout(60.0)
    start = time.monotonic()
    n, ok = 0, True
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        if ok:
            ok = all(b == (n + i) % 251 for i, b in enumerate(chunk))
        n += len(chunk)
    conn.close()
    print(json.dumps({"bytes": n, "pattern_ok": ok,
                      "seconds": round(time.monotonic() - start, 4)}), flush=True)


if __name__ == "__main__":
    main()
