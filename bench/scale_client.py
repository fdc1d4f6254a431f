#!/usr/bin/env python3
"""bench/scale_client.py -- the admin API client of bench/scale.sh.

  scale_client.py creates  ADMIN_PORT TOKEN COUNT VAULT_ID
      COUNT session creates, then COUNT service creates (in vault VAULT_ID), one
      keep-alive connection; prints one JSON line per kind with the rate and the
      latency quantiles (ms).
  scale_client.py propagation  PORT_A PORT_B TOKEN COUNT
      COUNT times: create a session through replica A, then ask replica B for it
      every 2 ms (at most 5 s) until it knows it; prints the quantiles (ms) of the
      time from A's answer to B's first 200.
Every loop is bounded; any unexpected status ends the run with an error.
"""
import http.client
import json
import sys
import time


class Admin:
    def __init__(self, port, token):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        self.conn.request(method, path, body=None if body is None else json.dumps(body), headers=self.headers)
        r = self.conn.getresponse()
        return r.status, r.read()


def quantiles(samples):
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    return {"n": len(s), "mean": round(sum(s) / len(s), 2), "p50": round(pick(0.5), 2),
            "p99": round(pick(0.99), 2), "max": round(s[-1], 2)}


def timed(count, step):
    latencies = []
    started = time.perf_counter()
    for i in range(count):
        t0 = time.perf_counter()
        step(i)
        latencies.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - started
    return dict(rate_per_s=round(count / elapsed, 1), **quantiles(latencies))


def creates(port, token, count, vault_id):
    admin = Admin(port, token)
    tag = str(int(time.time() * 1000))

    def session(i):
        status, body = admin.call("POST", "/v1/sessions", {"vault_ids": [vault_id], "ttl_seconds": 3600})
        if status != 201:
            sys.exit("session create: %d %s" % (status, body[:200]))

    def service(i):
        status, body = admin.call("POST", "/v1/vaults/%s/services" % vault_id, {
            "host": "new-%s-%d.bench.test" % (tag, i),
            "auth_config": {"type": "api-key", "header": "x-api-key", "key": "KEY"}})
        if status != 201:
            sys.exit("service create: %d %s" % (status, body[:200]))

    print(json.dumps({"kind": "session_create", **timed(count, session)}))
    print(json.dumps({"kind": "service_create", **timed(count, service)}))


def propagation(port_a, port_b, token, count):
    a, b = Admin(port_a, token), Admin(port_b, token)
    delays = []
    for _ in range(count):
        status, body = a.call("POST", "/v1/sessions", {"ttl_seconds": 3600})
        if status != 201:
            sys.exit("session create: %d %s" % (status, body[:200]))
        made = time.perf_counter()
        sid = json.loads(body)["id"]
        for _ in range(2500):
            status, _ = b.call("GET", "/v1/sessions/" + sid)
            if status == 200:
                break
            if status != 404:
                sys.exit("replica B: %d" % status)
            time.sleep(0.002)
        else:
            sys.exit("replica B did not see session %s within 5 s" % sid)
        delays.append((time.perf_counter() - made) * 1000)
    print(json.dumps({"kind": "propagation", **quantiles(delays)}))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "creates":
        creates(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif len(sys.argv) == 6 and sys.argv[1] == "propagation":
        propagation(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit(__doc__)
