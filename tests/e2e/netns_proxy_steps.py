"""Steps 0 to 6 of the sandbox end-to-end test: clients that use the proxy
settings the bootstrapper printed, and connections that ignore them."""

import json
import os
import time
import urllib.parse

from netns_common import (ADMIN, ALLOWED, BOUND, CONNECT_CLIENT, DENIED, GW_SBX_IP, GW_UP_IP,
                          PROXY_PORT, PYTHON, REQUESTS_CLIENT, SBX_IP, UPSTREAMS, URLLIB_CLIENT,
                          check, header_values, run)


class ProxySteps:
    """Steps that go through the proxy settings, or around them."""

    def step0_env(self):
        """The sandbox env, the bootstrap output and its files never hold the real key."""
        env = self.boot_env
        check(env.get("COMPOSIO_API_KEY") and env["COMPOSIO_API_KEY"] != self.real_key,
              "COMPOSIO_API_KEY in the sandbox env is empty or the real key")
        check(env.get("BACKEND_URL") == f"https://{BOUND}", f"BACKEND_URL is {env.get('BACKEND_URL')!r}")
        leaks = [k for k, v in env.items() if self.real_key in v or self.default_key in v]
        check(not leaks, f"the real key is in the sandbox env: {leaks}")
        check(self.real_key not in self.boot_stdout + self.boot_stderr, "the bootstrap output holds the real key")
        for root, _, files in os.walk(self.boot_dir):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    check(self.real_key.encode() not in f.read(), f"bootstrap file {name} holds the real key")
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            u = urllib.parse.urlsplit(env.get(name, ""))
            check((u.hostname, u.port) == (GW_SBX_IP, PROXY_PORT), f"{name} does not point at {GW_SBX_IP}:{PROXY_PORT}")
        check(self.boot_session and self.boot_session != "default", "the proxy URL names no session")
        for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"):
            check(os.path.isfile(env.get(name, "")), f"{name} is not a file")
        p = self.sandbox(["sh", "-c", "env"])
        check(p.returncode == 0 and self.real_key not in p.stdout, "the sandbox process env holds the real key")
        return f"{len(env)} variables, placeholder {env['COMPOSIO_API_KEY']!r}, session {self.boot_session}"

    def step1_curl(self):
        marker = f"/step1-curl-{self.nonce}"
        hdr, body = self.path("step1.headers"), self.path("step1.body")
        p = self.sandbox(["sh", "-c", 'exec curl -sS --max-time 15 -D "$1" -o "$2" -w "%{http_code}" '
                                      '-H "x-api-key: $COMPOSIO_API_KEY" "$BACKEND_URL$3/echo"',
                          "sh", hdr, body, marker])
        check(p.returncode == 0 and p.stdout == "200", f"curl exited {p.returncode}, HTTP {p.stdout!r}: {p.stderr.strip()}")
        with open(hdr) as f1, open(body) as f2:
            view = f1.read() + f2.read()
        self.expect_injected(marker, self.boot_session, view)
        return "HTTP 200; upstream got the real key (one x-api-key), SNI api.bound.test; access log: mitm, bootstrap session"

    def python_client(self, script, marker):
        p = self.sandbox([PYTHON, "-c", script, marker])
        check(p.returncode == 0, f"exited {p.returncode}: {p.stderr.strip()[-600:]}")
        out = json.loads(p.stdout)
        check(out["status"] == 200, f"HTTP {out['status']}")
        self.expect_injected(marker, self.boot_session, p.stdout)
        return out

    def step2_urllib(self):
        self.python_client(URLLIB_CLIENT, f"/step2-urllib-{self.nonce}")
        return "HTTP 200; upstream got the real key"

    def step2_requests(self):
        out = self.python_client(REQUESTS_CLIENT, f"/step2-requests-{self.nonce}")
        check(out["file"].startswith("/usr/lib/python3/dist-packages/"),
              f"requests came from {out['file']}, not Debian's python3-requests")
        return f"HTTP 200 (requests {out['requests']}, Debian's); upstream got the real key"

    def access_lines(self):
        try:
            with open(self.path("access.log")) as f:
                text = f.read()
        except FileNotFoundError:
            return []
        # A batch being written may show as a partial last line: count only whole lines.
        lines = text[:text.rfind("\n") + 1].splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({})
        return out

    def wait_access_lines(self, since, match, count=1, wait=3.0):
        """Access-log entries after line `since` for which match(entry) holds,
        polled until there are `count` of them or `wait` s passed (lines are
        written in batches, up to 100 ms after the request ended)."""
        deadline = time.monotonic() + wait
        while True:
            found = [e for e in self.access_lines()[since:] if match(e)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def git_ls_remote(self, extra_env):
        """git ls-remote through the proxy; returns (sessions, keys) of the
        requests that reached the bound upstream."""
        before, log_before = self.snapshot(), len(self.access_lines())
        p = self.sandbox(["sh", "-c", 'exec git ls-remote "$BACKEND_URL/repo.git"'],
                         env=dict(self.boot_env, **extra_env), timeout=30)
        check(p.returncode == 0, f"git ls-remote exited {p.returncode}: {p.stderr.strip()[-600:]}")
        check(f"{self.git_sha}\trefs/heads/main" in p.stdout, f"git ls-remote printed {p.stdout!r}")
        check(self.real_key not in p.stdout + p.stderr and self.default_key not in p.stdout + p.stderr,
              "git printed a real key")
        reqs = [e for e in self.new_events(before, BOUND) if e["event"] == "request"]
        check(reqs and all(e["path"].startswith("/repo.git/") for e in reqs), "no git requests reached the upstream")
        keys = set()
        for e in reqs:
            values = header_values(e, "x-api-key")
            check(len(values) == 1 and values[0] in (self.real_key, self.default_key),
                  f"git request {e['path']}: x-api-key {[self.mask(v) for v in values]}, expected one real key")
            check(e["client"] == GW_UP_IP, "a git request did not come from the gateway")
            keys.add(self.mask(values[0]))
        entries = self.wait_access_lines(log_before, lambda e: e.get("path", "").startswith("/repo.git/"),
                                         count=len(reqs))
        check(len(entries) == len(reqs) and all(e.get("ingress") == "mitm" for e in entries),
              f"access log: {len(entries)} mitm lines for {len(reqs)} git requests")
        paths = ", ".join(urllib.parse.urlsplit(e["path"]).path for e in reqs)
        return sorted({e.get("session") for e in entries}), sorted(keys), f"{len(reqs)} requests ({paths})"

    def step3_git(self):
        if self.git_sha is None:
            return None, "git is not installed"
        # a) exactly the bootstrapper's env.
        sessions, keys, what = self.git_ls_remote({})
        detail = f"refs/heads/main {self.git_sha[:12]} over dumb HTTP; {what}; upstream got {', '.join(keys)}"
        if sessions == [self.boot_session]:
            check(keys == ["<REAL KEY>"], "git on the bootstrap session got another key")
            detail += " (bootstrap session)"
        else:
            # git's default proxy auth method is "anyauth": it sends the
            # proxy credentials only after a 407 challenge, and a proxy with a
            # default session never challenges.
            check(sessions == ["default"] and keys == ["<DEFAULT SESSION KEY>"],
                  f"git ran on sessions {sessions} with keys {keys}")
            detail += (" -- NOTE: git sent no Proxy-Authorization (http.proxyAuthMethod anyauth waits for a 407 "
                       "that a proxy with sessions.default never sends), so it rode the default session")
        # b) the same with basic proxy auth: the bootstrap session, strictly.
        sessions, keys, _ = self.git_ls_remote({"GIT_HTTP_PROXY_AUTHMETHOD": "basic"})
        check(sessions == [self.boot_session] and keys == ["<REAL KEY>"],
              f"git with GIT_HTTP_PROXY_AUTHMETHOD=basic ran on sessions {sessions} with keys {keys}")
        detail += "; with GIT_HTTP_PROXY_AUTHMETHOD=basic: bootstrap session, real key"
        return True, detail

    def step4_tunnel(self):
        marker = f"/step4-tunnel-{self.nonce}"
        before = self.snapshot()
        # curl trusting the test CA alone: it verifies only if allowed.test's own certificate arrives.
        p = self.sandbox(["sh", "-c", 'exec curl -sS --max-time 15 --cacert "$1" -o /dev/null -w "%{http_code}" '
                                      '-H "x-api-key: $COMPOSIO_API_KEY" "https://allowed.test$2"',
                          "sh", self.test_ca, marker])
        check(p.returncode == 0 and p.stdout == "200",
              f"curl (test CA only) to allowed.test exited {p.returncode}, HTTP {p.stdout!r}: {p.stderr.strip()}")
        reqs = self.requests_for(ALLOWED, marker)
        check(len(reqs) == 1, f"allowed.test recorded {len(reqs)} requests for {marker}")
        keys = header_values(reqs[0], "x-api-key")
        check(keys == [self.boot_env["COMPOSIO_API_KEY"]],
              f"allowed.test received x-api-key {[self.mask(k) for k in keys]}, "
              "expected the placeholder untouched")
        check(reqs[0]["sni"] == ALLOWED and reqs[0]["client"] == GW_UP_IP, "allowed.test: wrong SNI or peer")
        # The certificate itself, byte for byte.
        p = self.sandbox([PYTHON, "-c", CONNECT_CLIENT, f"{ALLOWED}:443", ALLOWED, self.test_ca])
        check(p.returncode == 0, f"CONNECT client exited {p.returncode}: {p.stderr.strip()[-400:]}")
        out = json.loads(p.stdout)
        check(out["status"] == 200 and out.get("verified"), f"CONNECT allowed.test: {out}")
        check(out["cert_sha256"] == self.leaf[ALLOWED]["sha256"],
              "the certificate the client saw for allowed.test is not the upstream's own")
        # Control: the bound host is intercepted, so the test CA alone does not verify it.
        p = self.sandbox(["sh", "-c", 'exec curl -sS --max-time 15 --cacert "$1" -o /dev/null "https://api.bound.test$2"',
                          "sh", self.test_ca, f"/step4-control-{self.nonce}"])
        check(p.returncode == 60, f"curl (test CA only) to the bound host exited {p.returncode}, expected 60 "
                                  "(certificate not from the test CA)")
        p = self.sandbox([PYTHON, "-c", CONNECT_CLIENT, f"{BOUND}:443", BOUND, self.path("proxyca", "ca.pem")])
        out_bound = json.loads(p.stdout)
        check(out_bound.get("verified") and out_bound["cert_sha256"] != self.leaf[BOUND]["sha256"],
              f"bound host: expected a vaultgate-minted certificate, got {out_bound}")
        entries = self.access_entries("allowed.test", wait=3)
        tunnels = [e for e in entries if e.get("ingress") == "tunnel" and e.get("session") == self.boot_session]
        check(tunnels, "no access-log line with ingress tunnel for allowed.test")
        check(not [e for e in self.new_events(before, BOUND) if e["event"] == "request"],
              "the bound upstream got a request from the control run (it should have stopped at the TLS check)")
        return (f"curl with the test CA alone: HTTP 200; cert sha256 {out['cert_sha256'][:16]}... = allowed.test's own "
                f"(issuer {out['issuer'].get('commonName')!r}); upstream saw the placeholder; control: bound host's "
                f"cert is minted by {out_bound['issuer'].get('commonName')!r}, curl with the test CA exits 60")

    def direct_attempts(self, label):
        """curl ignoring the proxy, to every upstream address; all must fail."""
        results = []
        argvs = [["curl", "-sS", "--noproxy", "*", "--connect-timeout", "3", "--max-time", "6",
                  "--cacert", self.test_ca, "--resolve", f"{host}:443:{addr}",
                  "-o", "/dev/null", "-w", "%{http_code}", f"https://{host}/{label}-{self.nonce}"]
                 for host, addr in UPSTREAMS.items()]
        # and the admin port, on the gateway's sandbox-side address
        argvs.append(["curl", "-sS", "--noproxy", "*", "--connect-timeout", "3", "--max-time", "6",
                      f"http://{GW_SBX_IP}:3190/healthz"])
        dropped = self.gw_dropped()
        procs = self.sandbox_many(argvs)
        dropped = self.gw_dropped() - dropped
        for (host, addr), p in zip(list(UPSTREAMS.items()) + [("gateway admin port", f"{GW_SBX_IP}:3190")], procs):
            check(p.returncode != 0, f"direct connection to {host} ({addr}) succeeded: HTTP {p.stdout}")
            last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
            results.append(f"{host}: curl exit {p.returncode} ({last})")
        # Each SYN (and its retransmission) to an upstream was dropped by the
        # gateway as not forwardable.
        check(dropped >= len(UPSTREAMS), f"the gateway counted {dropped} unforwardable packets, "
                                         f"expected at least {len(UPSTREAMS)}")
        results.append(f"gateway dropped {dropped} packets as not forwardable (IP InAddrErrors)")
        return results

    def step5_direct(self):
        links = run(self.in_ns("sbx", ["ip", "-o", "link", "show"])).stdout
        names = sorted(line.split(":")[1].strip().split("@")[0] for line in links.splitlines())
        check(names == sorted(["lo", self.if_sbx]), f"sandbox interfaces: {names}")
        routes = [r.strip() for r in run(self.in_ns("sbx", ["ip", "-4", "route", "show"])).stdout.strip().splitlines()]
        check(f"default via {GW_SBX_IP} dev {self.if_sbx}" in routes and len(routes) == 2,
              f"sandbox routes: {routes}")
        check(not self.forwarding(), "ip_forward is on in the gateway")
        before = self.snapshot()
        results = self.direct_attempts("step5-direct")
        time.sleep(0.3)
        seen = {h: self.new_events(before, h) for h in self.records}
        check(not any(seen.values()), f"an upstream saw a direct connection: {seen}")
        # Control: with forwarding on for a moment, the same direct request gets
        # through (with the placeholder only), so the failure above is the
        # gateway's doing, not a broken topology.
        marker = f"/step5-control-{self.nonce}"
        try:
            self.set_forwarding(True)
            p = self.sandbox(["sh", "-c", 'exec curl -sS --noproxy "*" --connect-timeout 3 --max-time 8 --cacert "$1" '
                                          '--resolve "api.bound.test:443:$2" -o /dev/null -w "%{http_code}" '
                                          '-H "x-api-key: $COMPOSIO_API_KEY" "https://api.bound.test$3"',
                              "sh", self.test_ca, UPSTREAMS[BOUND], marker])
        finally:
            self.set_forwarding(False)
        check(p.returncode == 0 and p.stdout == "200",
              f"control run (forwarding on) failed: exit {p.returncode}: {p.stderr.strip()}")
        reqs = self.requests_for(BOUND, marker)
        check(len(reqs) == 1 and header_values(reqs[0], "x-api-key") == [self.boot_env["COMPOSIO_API_KEY"]]
              and reqs[0]["client"] == SBX_IP,
              "control run: the upstream should have seen the sandbox's address and only the placeholder")
        before = self.snapshot()
        self.direct_attempts("step5-direct-again")
        seen = {h: self.new_events(before, h) for h in self.records}
        check(not any(seen.values()), f"an upstream saw a direct connection after forwarding went off: {seen}")
        return ("; ".join(results) + "; upstreams saw no TCP connection. Control with "
                "ip_forward=1: direct request arrives from 10.231.1.2 with the placeholder only; off again: fails again")

    def step6_denied(self):
        marker = f"/step6-denied-{self.nonce}"
        before = self.snapshot()
        hdr = self.path("step6.headers")
        p = self.sandbox(["sh", "-c", 'exec curl -sS --max-time 15 -D "$1" -o /dev/null -w "%{http_connect}" '
                                      '-H "x-api-key: $COMPOSIO_API_KEY" "https://denied.test$2"', "sh", hdr, marker])
        check(p.returncode != 0 and p.stdout == "403",
              f"curl to denied.test: exit {p.returncode}, CONNECT answer {p.stdout!r}, expected 403")
        with open(hdr) as f:
            headers = f.read().lower()
        check("x-vaultgate-reason: domain_not_allowed" in headers, f"no X-Vaultgate-Reason in {headers!r}")
        denials = {}
        for target in (f"{DENIED}:443", f"{UPSTREAMS[DENIED]}:443", f"{ADMIN}", f"{GW_SBX_IP}:{PROXY_PORT}"):
            p = self.sandbox([PYTHON, "-c", CONNECT_CLIENT, target, target.split(":")[0], self.test_ca])
            check(p.returncode == 0, f"CONNECT {target}: client exited {p.returncode}: {p.stderr.strip()[-300:]}")
            out = json.loads(p.stdout)
            check(out["status"] == 403, f"CONNECT {target}: status {out['status']}, expected 403")
            body = json.loads(out.get("body") or "{}")
            check(body.get("error") == "egress_denied", f"CONNECT {target}: body {out.get('body')!r}")
            check(out["headers"].get("x-vaultgate-reason") == body.get("reason"),
                  f"CONNECT {target}: X-Vaultgate-Reason differs from the body's reason")
            denials[target] = body.get("reason")
        check(denials[f"{DENIED}:443"] == "domain_not_allowed", f"denied.test reason {denials[f'{DENIED}:443']}")
        time.sleep(0.3)
        seen = self.new_events(before, DENIED)
        check(not seen, f"denied.test saw {len(seen)} events")
        entries = [e for e in self.access_entries("denied.test") if e.get("ingress") == "denied"]
        check(entries and entries[0].get("reason") == "domain_not_allowed", "no access-log line ingress denied")
        return ("curl: CONNECT answered 403, X-Vaultgate-Reason domain_not_allowed; raw CONNECT reasons: "
                + ", ".join(f"{t} -> {r}" for t, r in denials.items()) + "; denied.test saw no connection")
