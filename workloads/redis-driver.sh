#!/bin/sh
# redis-driver.sh [REQUESTS]: the load for the redis workload (run in the work folder,
# beside redis-server). Waits for the server on the port prepare.sh chose (redis.port),
# runs redis-benchmark against it on the loopback (one connection, no pipelining,
# keys drawn at random from a fixed space of 1000), then shuts the server down
# without saving. Bounded: gives up after 120 s of waiting, and always sends shutdown.
set -u
port=$(cat redis.port)
requests=${1:-2000}
cli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

tries=0
until [ "$(cli ping 2>/dev/null)" = "PONG" ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 1200 ]; then
        echo "redis-driver: the server did not answer on port $port" >&2
        exit 1
    fi
    sleep 0.1
done

status=0
redis-benchmark -h 127.0.0.1 -p "$port" -c 1 -n "$requests" -r 1000 -d 64 -q \
    -t set,get,incr,lpush,rpop,sadd,hset,zadd,lrange_100,mset >redis-benchmark.txt 2>&1 || status=$?
cli shutdown nosave >/dev/null 2>&1 || true
exit "$status"
