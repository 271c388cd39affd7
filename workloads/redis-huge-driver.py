#!/usr/bin/env python3
"""redis-huge-driver.py KEYS SIZE REQUESTS: the load of the redis-huge workload.

Run in the work folder beside redis-server (the port is in redis.port, which prepare.sh
wrote). Waits for the server, fills it with DEBUG POPULATE (KEYS keys "key:0" ..
"key:KEYS-1", values of SIZE bytes made by the server itself), then sends REQUESTS
MGETs of 8 keys each, drawn uniformly at random (a fixed-seed random.Random: the same
keys in the same order on every run), pipelined 64 requests at a time on one
connection, checks that every reply holds 8 values of SIZE bytes, and shuts the server
down without saving. Bounded: gives up after 120 s of waiting for the server, or 600 s
for one reply.

Standard library only; blocking sockets (redis-cli --pipe busy-waits on a slow
server, which takes the CPU from the server being recorded).
"""
import random
import socket
import sys
import time

SEED = 20240101
BATCH = 64      # requests sent before their replies are read
PER = 8         # keys an MGET asks for


def command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Connection:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.file = self.sock.makefile("rb")

    def _line(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("the server closed the connection")
        return line[:-2]

    def reply(self):
        """One reply: bytes for a status or bulk string, None for a nil, an int."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError("server error: " + rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("the server closed the connection")
            return data[:n]
        raise RuntimeError("unexpected reply %r" % line[:40])

    def call(self, *args):
        self.sock.sendall(command(*args))
        return self.reply()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    keys, size, requests = (int(a) for a in sys.argv[1:])
    port = int(open("redis.port").read())

    deadline = time.monotonic() + 120
    while True:
        try:
            conn = Connection(port)
            if conn.call("PING") == b"PONG":
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit("redis-huge-driver: the server did not answer on port %d" % port)
        time.sleep(0.1)

    try:
        conn.call("DEBUG", "POPULATE", keys, "key", size)
        # Every key exists, so every reply is an array of PER values of SIZE bytes:
        # read a batch's replies whole and check where each begins.
        start = b"*%d\r\n$%d\r\n" % (PER, size)
        reply_bytes = len(b"*%d\r\n" % PER) + PER * (len(b"$%d\r\n" % size) + size + 2)
        rng = random.Random(SEED)
        done = 0
        while done < requests:
            n = min(BATCH, requests - done)
            batch = [["key:%d" % rng.randrange(keys) for _ in range(PER)] for _ in range(n)]
            conn.sock.sendall(b"".join(command("MGET", *names) for names in batch))
            replies = conn.file.read(n * reply_bytes)
            if len(replies) != n * reply_bytes or any(
                    not replies.startswith(start, i * reply_bytes) for i in range(n)):
                raise RuntimeError("MGET: unexpected replies after %d requests" % done)
            done += n
        print("redis-huge-driver: %d keys of %d bytes, %d MGETs of %d" % (keys, size, requests, PER))
    finally:
        try:
            conn.sock.sendall(command("SHUTDOWN", "NOSAVE"))
        except OSError:
            pass


if __name__ == "__main__":
    main()
