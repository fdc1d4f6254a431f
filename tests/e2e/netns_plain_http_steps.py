"""Step 8 of the sandbox end-to-end test: plain HTTP through the transparent
listener."""

import json
import os
import time

from netns_common import (ADDRESSES, BOUND, DENIED, GW_UP_IP, HTTP_PORT, PLAIN,
                          PlainHttpUnavailable, SBX_IP, StepFailed, TRANSPARENT_PORT, check,
                          header_values)


class PlainHttpSteps:
    """Plain HTTP through the transparent listener."""

    def plain_get(self, host, label, address=None, headers=()):
        """curl http://HOST/LABEL-nonce from the sandbox with no proxy settings,
        HOST resolved to ADDRESS (its own by default). Returns (marker, the
        curl process, the HTTP status curl saw, response head, response body)."""
        marker = f"/{label}-{self.nonce}"
        hdr, body = self.path(f"{label}.headers"), self.path(f"{label}.body")
        for f in (hdr, body):
            if os.path.exists(f):
                os.unlink(f)
        argv = ["curl", "-sS", "--max-time", "10", "--resolve", f"{host}:{HTTP_PORT}:{address or ADDRESSES[host]}",
                "-D", hdr, "-o", body, "-w", "%{http_code}"]
        for h in headers:
            argv += ["-H", h]
        p = self.sandbox(argv + [f"http://{host}{marker}"], env={})
        texts = []
        for f in (hdr, body):
            try:
                with open(f, encoding="utf-8", errors="replace") as fh:
                    texts.append(fh.read())
            except FileNotFoundError:
                texts.append("")
        return marker, p, p.stdout.strip(), texts[0], texts[1]

    @staticmethod
    def response_header(head, name):
        """The last response's header NAME (curl -D keeps every response)."""
        value = None
        for line in head.splitlines():
            if line.startswith("HTTP/"):
                value = None
            k, sep, v = line.partition(":")
            if sep and k.strip().lower() == name.lower():
                value = v.strip()
        return value

    def logged(self, marker, wait=3.0):
        return [e for e in self.access_entries(marker, wait=wait) if e.get("path", "").startswith(marker)]

    def step8_plain_http(self):
        if not self.listening(TRANSPARENT_PORT):
            raise PlainHttpUnavailable(f"nothing listens on 0.0.0.0:{TRANSPARENT_PORT} in the gateway namespace")
        self.install_redirect()
        placeholder = self.boot_env.get("COMPOSIO_API_KEY") or "vaultgate-placeholder-COMPOSIO_API_KEY"
        api_key = f"x-api-key: {placeholder}"
        real_keys = (self.real_key, self.default_key)
        step_start = self.snapshot()
        details = []

        # plain.test, allowed: forwarded in the clear with the client's own header.
        before = self.snapshot()
        marker, p, code, head, body = self.plain_get(PLAIN, "step8-plain", headers=[api_key])
        if code in ("", "000"):
            if p.returncode == 28:
                raise StepFailed(f"http://{PLAIN}{marker} through the redirect: no answer and no close within 10 s "
                                 f"(curl exit 28: {p.stderr.strip()})")
            time.sleep(0.3)
            seen = [e for e in self.new_events(before, PLAIN) if e["event"] == "request"]
            check(not any(k in json.dumps(seen) for k in real_keys), f"{PLAIN} received a real key")
            check(not seen, f"{PLAIN} received the request ({len(seen)} recorded) but the client got no HTTP "
                            f"response: curl exit {p.returncode}: {p.stderr.strip()}")
            how = {52: "the connection was closed with no reply", 56: "the connection was reset"}.get(
                p.returncode, "the reply was not HTTP" if "HTTP/0.9" in p.stderr else "no HTTP reply")
            raise PlainHttpUnavailable(
                f"a redirected http:// request to {PLAIN} got no HTTP response: {how} (a listener that reads only "
                f"TLS answers with a TLS alert and closes); curl exit {p.returncode}: "
                f"{p.stderr.strip() or 'no message'}; {PLAIN} saw no request")
        check(code == "200" and p.returncode == 0,
              f"http://{PLAIN}{marker}: curl exit {p.returncode}, HTTP {code}, "
              f"X-Vaultgate-Reason {self.response_header(head, 'x-vaultgate-reason')!r}: {p.stderr.strip()} "
              f"{body[:200]}")
        check(json.loads(body or "{}").get("server") == PLAIN, f"http://{PLAIN}: body {body[:200]!r}")
        check(not any(k in head + body for k in real_keys), f"http://{PLAIN}{marker}: the client saw a real key")
        reqs = self.requests_for(PLAIN, marker, port=HTTP_PORT)
        check(len(reqs) == 1, f"{PLAIN}:80 recorded {len(reqs)} requests for {marker}, expected 1")
        r = reqs[0]
        keys = header_values(r, "x-api-key")
        check(keys == [placeholder], f"{PLAIN} received x-api-key {[self.mask(k) for k in keys]}, "
                                     f"expected the client's placeholder untouched")
        check(r["client"] == GW_UP_IP, f"{PLAIN} was reached from {r['client']}, not from the gateway")
        hosts = header_values(r, "host")
        check(hosts in ([PLAIN], [f"{PLAIN}:{HTTP_PORT}"]), f"{PLAIN} received Host {hosts}")
        check(not header_values(r, "proxy-authorization"), f"{PLAIN} received a Proxy-Authorization header")
        check(r["path"] == marker, f"{PLAIN} received the path {r['path']!r}, expected {marker!r}")
        entries = self.logged(marker)
        check(len(entries) == 1, f"access log: {len(entries)} lines for {marker}, expected 1")
        e = entries[0]
        check(e.get("ingress") == "http" and e.get("status") == 200 and e.get("session") == "default"
              and e.get("host") == PLAIN and e.get("port") == HTTP_PORT and e.get("client") == SBX_IP,
              f"access log for {marker}: {e}; expected ingress http, status 200, session default, "
              f"{PLAIN}:{HTTP_PORT}, client {SBX_IP}")
        connection = self.response_header(head, "connection")
        details.append(f"http://{PLAIN} (no proxy settings): HTTP 200 from {PLAIN} itself, which got the "
                       f"client's placeholder untouched, Host {hosts[0]}, from the gateway; access log: http, "
                       f"session default; response Connection: {connection}")

        # The bound host over plain HTTP: forwarded without injection, or refused.
        outcomes = []
        for label, hdrs in (("step8-bound-placeholder", [api_key]), ("step8-bound-noheader", [])):
            before = self.snapshot()
            marker, p, code, head, body = self.plain_get(BOUND, label, headers=hdrs)
            time.sleep(0.2)
            new = self.new_events(before, BOUND)
            check(not any(k in json.dumps(new) for k in real_keys),
                  f"http://{BOUND}{marker}: the bound upstream received a real key")
            check(not any(k in head + body for k in real_keys), f"http://{BOUND}{marker}: the client saw a real key")
            check(not [x for x in new if x.get("port") != HTTP_PORT],
                  f"http://{BOUND}{marker}: something reached the bound host's TLS ports")
            reqs = self.requests_for(BOUND, marker, port=HTTP_PORT)
            entries = self.logged(marker)
            check(len(entries) == 1, f"access log: {len(entries)} lines for {marker}, expected 1")
            if code == "200":
                check(len(reqs) == 1, f"http://{BOUND}{marker}: HTTP 200 but {len(reqs)} requests arrived on port 80")
                keys = header_values(reqs[0], "x-api-key")
                check(keys == ([placeholder] if hdrs else []),
                      f"http://{BOUND}{marker}: the upstream got x-api-key {[self.mask(k) for k in keys]}, expected "
                      f"{'the placeholder' if hdrs else 'none'}")
                check(reqs[0]["client"] == GW_UP_IP, f"http://{BOUND}{marker}: reached from {reqs[0]['client']}")
                check(entries[0].get("ingress") == "http" and entries[0].get("session") == "default",
                      f"access log for {marker}: {entries[0]}, expected ingress http of the default session")
                outcomes.append(f"{'with the placeholder' if hdrs else 'without x-api-key'}: forwarded, upstream "
                                f"saw {'the placeholder' if hdrs else 'no x-api-key'}")
            elif code == "403":
                reason = self.response_header(head, "x-vaultgate-reason")
                check(reason, f"http://{BOUND}{marker}: 403 without X-Vaultgate-Reason")
                check(not reqs, f"http://{BOUND}{marker}: refused, yet the upstream got the request")
                check(entries[0].get("ingress") == "denied" and entries[0].get("reason") == reason,
                      f"access log for {marker}: {entries[0]}, expected ingress denied, reason {reason}")
                outcomes.append(f"{'with the placeholder' if hdrs else 'without x-api-key'}: refused 403 {reason}")
            else:
                raise StepFailed(f"http://{BOUND}{marker}: curl exit {p.returncode}, HTTP {code}, expected 200 "
                                 f"(forwarded without injection) or 403: {p.stderr.strip()}")
        details.append(f"http://{BOUND} (bound host, port 80 allowed): " + "; ".join(outcomes)
                       + "; no real key anywhere")

        # A host not allowed over plain HTTP: 403, never contacted.
        before = self.snapshot()
        marker, p, code, head, body = self.plain_get(DENIED, "step8-denied", headers=[api_key])
        reason = self.response_header(head, "x-vaultgate-reason")
        check(code == "403" and reason == "domain_not_allowed",
              f"http://{DENIED}{marker}: curl exit {p.returncode}, HTTP {code}, X-Vaultgate-Reason {reason!r}; "
              "expected 403 domain_not_allowed")
        entries = self.logged(marker)
        check(len(entries) == 1 and entries[0].get("ingress") == "denied"
              and entries[0].get("reason") == "domain_not_allowed" and entries[0].get("session") == "default",
              f"access log for {marker}: {entries}, expected one denied/domain_not_allowed line of the default session")
        time.sleep(0.3)
        seen = self.new_events(before, DENIED)
        check(not seen, f"{DENIED} saw {len(seen)} events: {seen}")
        details.append(f"http://{DENIED}: 403, X-Vaultgate-Reason domain_not_allowed, {DENIED} saw nothing")

        # An allowed Host name sent to the denied host's address: the request
        # goes to the original destination only if the name resolves to it.
        before = self.snapshot()
        marker, p, code, head, body = self.plain_get(PLAIN, "step8-mismatch", address=ADDRESSES[DENIED],
                                                     headers=[api_key])
        reason = self.response_header(head, "x-vaultgate-reason")
        check(code == "403" and reason,
              f"Host {PLAIN} sent to {ADDRESSES[DENIED]}: curl exit {p.returncode}, HTTP {code}, "
              f"X-Vaultgate-Reason {reason!r}; expected a 403 with a reason")
        time.sleep(0.3)
        seen = {h: self.new_events(before, h) for h in self.records}
        check(not any(seen.values()), f"Host {PLAIN} sent to {ADDRESSES[DENIED]} reached an upstream: {seen}")
        entries = self.logged(marker)
        check(len(entries) == 1 and entries[0].get("ingress") == "denied",
              f"access log for {marker}: {entries}, expected one denied line")
        details.append(f"Host {PLAIN} sent to {DENIED}'s address: 403 {reason}, no upstream contacted")

        # Nothing that arrived anywhere during the step carried a real key.
        new = {h: self.new_events(step_start, h) for h in self.records}
        check(not any(k in json.dumps(new) for k in real_keys), "an upstream received a real key over plain HTTP")
        check(not any(k in json.dumps(self.logged("/step8-", wait=0)) for k in real_keys),
              "the access log holds a real key")
        return True, "; ".join(details)

    # ---- driver ----------------------------------------------------------
