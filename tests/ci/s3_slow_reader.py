#!/usr/bin/python3
"""s3-tap-ci helper: a client that stops reading in the middle of a GET, then resumes.

Usage: s3_slow_reader.py HOST PORT PATH EXPECTED_MD5 PAUSE_SECONDS
Reads the headers and 64 KiB of body, stops reading for PAUSE_SECONDS (the
server's window to it closes and it must wait), then reads the rest and
checks the digest. Exit 0 when the body is complete and correct.
"""
import hashlib
import socket
import sys
import time

host, port, path, want, pause = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
s = socket.create_connection((host, port), timeout=30)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # a small buffer: the window closes for real
s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = s.recv(4096)
    if not chunk:
        sys.exit("closed before the headers")
    buf += chunk
head, body = buf.split(b"\r\n\r\n", 1)
length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
while len(body) < 65536:
    body += s.recv(65536 - len(body))
time.sleep(pause)
while len(body) < length:
    chunk = s.recv(1 << 16)
    if not chunk:
        break
    body += chunk
got = hashlib.md5(body).hexdigest()
if len(body) != length or got != want:
    sys.exit(f"body {len(body)}/{length} bytes, md5 {got}, want {want}")
print(f"read {length} bytes after a {pause}s pause")
