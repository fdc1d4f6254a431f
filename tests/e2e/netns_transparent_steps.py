"""Steps 7 and 9 of the sandbox end-to-end test: TLS through the transparent
listener, reached by an nftables redirect with no proxy settings."""

import json
import textwrap
import time

from netns_common import (ALLOWED, BOUND, DENIED, GW_SBX_IP, HTTP_PORT, PLAIN, PLAIN_HTTP, SBX_IP,
                          TRANSPARENT_PORT, UNREDIRECTED_PORT, UPSTREAMS, UP_SUBNET, Unavailable,
                          check, header_values, run)


class TransparentSteps:
    """Steps through the transparent listener (TLS)."""

    def install_redirect(self):
        """The gateway's nftables redirect of the sandbox's TCP 443 and 80 to
        the transparent listener (once; steps 7 and 8 share it)."""
        gw = self.ns["gw"]
        if self.nft_table not in self.state["nft"].get(gw, []):
            ruleset = textwrap.dedent(f"""\
                table inet {self.nft_table} {{
                    chain prerouting {{
                        type nat hook prerouting priority dstnat; policy accept;
                        iifname "{self.if_gw_sbx}" tcp dport {{ {HTTP_PORT}, 443 }} redirect to :{TRANSPARENT_PORT}
                    }}
                }}
            """)
            self.state["nft"].setdefault(gw, []).append(self.nft_table)
            self.save_state()
            run(self.in_ns("gw", ["nft", "-f", "-"]), input_text=ruleset)
            # An explicit route to the upstream subnet (the default route already
            # covers it); forwarding stays off, so only redirected traffic gets anywhere.
            run(["ip", "-n", self.ns["sbx"], "route", "replace", UP_SUBNET, "via", GW_SBX_IP])
        check(not self.forwarding(), "ip_forward is on in the gateway")

    def step7_transparent(self):
        if not self.listening(TRANSPARENT_PORT):
            raise Unavailable(f"nothing listens on 0.0.0.0:{TRANSPARENT_PORT} in the gateway namespace although "
                              "listen.transparent is set")
        self.install_redirect()
        proxy_ca = self.path("sandbox-env", "ca.pem")
        no_proxy_env = {}     # PATH only: no proxy variables, no placeholder
        details = []

        # Whatever the listener does, these hold: a port nothing redirects goes
        # nowhere, and a denied host is never contacted.
        before, log_start = self.snapshot(), len(self.access_lines())
        p, p_denied = self.sandbox_many([
            ["curl", "-sS", "--connect-timeout", "3", "--max-time", "6", "--cacert", self.test_ca,
             "--resolve", f"{BOUND}:{UNREDIRECTED_PORT}:{UPSTREAMS[BOUND]}",
             f"https://{BOUND}:{UNREDIRECTED_PORT}/step7-unredirected-{self.nonce}"],
            ["curl", "-sS", "--max-time", "15", "--cacert", self.test_ca,
             "--resolve", f"{DENIED}:443:{UPSTREAMS[DENIED]}", f"https://{DENIED}/step7-denied-{self.nonce}"],
        ], env=no_proxy_env)
        check(p.returncode != 0, "a direct connection to an unredirected port succeeded")
        check(p_denied.returncode != 0, "transparent denied.test: the request succeeded")
        time.sleep(0.3)
        seen = {h: self.new_events(before, h) for h in self.records}
        check(not any(seen.values()), f"an upstream saw the unredirected or the denied connection: {seen}")
        details.append(f"port {UNREDIRECTED_PORT} (not redirected): curl exit {p.returncode}; denied.test: curl exit "
                       f"{p_denied.returncode}; upstreams saw nothing")
        # Wait for the denial's (batched) log line before marking where the next
        # step's lines begin.
        self.wait_access_lines(log_start, lambda e: e.get("host") == DENIED)

        # The bound host, with no proxy settings at all.
        log_before = len(self.access_lines())
        marker = f"/step7-transparent-{self.nonce}"
        p = self.sandbox(["curl", "-sS", "--max-time", "15", "--cacert", proxy_ca,
                          "--resolve", f"{BOUND}:443:{UPSTREAMS[BOUND]}", "-H", "x-api-key: sandbox-has-no-key",
                          "-o", "/dev/null", "-w", "%{http_code}", f"https://{BOUND}{marker}"], env=no_proxy_env)
        if not (p.returncode == 0 and p.stdout == "200"):
            time.sleep(0.3)
            logged = [f"{e.get('ingress')}/{e.get('reason')} host={e.get('host')!r}"
                      for e in self.access_lines()[log_before:]]
            raise Unavailable(f"a redirected request to {BOUND} failed: curl exit {p.returncode}, HTTP {p.stdout!r}: "
                              f"{p.stderr.strip()}; vaultgate logged {logged}")
        _, entry = self.expect_injected(marker, "default", key=self.default_key)
        details.insert(0, "curl with no proxy variables: HTTP 200, upstream got the default session's real key "
                          f"(access log: {entry.get('ingress')}, session {entry.get('session')!r})")
        entries = [e for e in self.access_lines()[log_start:log_before] if e.get("host") == DENIED]
        check(len(entries) == 1 and entries[0].get("ingress") == "denied"
              and entries[0].get("reason") == "domain_not_allowed" and entries[0].get("session") == "default",
              f"transparent denied.test: access log {entries}, expected one denied/domain_not_allowed line")

        # An allowed host is tunnelled to its own certificate.
        marker = f"/step7-allowed-{self.nonce}"
        p = self.sandbox(["curl", "-sS", "--max-time", "15", "--cacert", self.test_ca,
                          "--resolve", f"{ALLOWED}:443:{UPSTREAMS[ALLOWED]}", "-H", "x-api-key: sandbox-has-no-key",
                          "-o", "/dev/null", "-w", "%{http_code}", f"https://{ALLOWED}{marker}"], env=no_proxy_env)
        check(p.returncode == 0 and p.stdout == "200",
              f"transparent allowed.test with the test CA alone: exit {p.returncode}, HTTP {p.stdout!r}: "
              f"{p.stderr.strip()}")
        reqs = self.requests_for(ALLOWED, marker)
        check(len(reqs) == 1 and header_values(reqs[0], "x-api-key") == ["sandbox-has-no-key"],
              "transparent allowed.test: the upstream should see the client's own header")
        tunnels = self.wait_access_lines(log_before, lambda e: e.get("host") == ALLOWED)
        check(tunnels and tunnels[-1].get("ingress") == "tunnel" and tunnels[-1].get("session") == "default",
              f"transparent allowed.test: access log {tunnels}, expected a tunnel line of the default session")
        details.append("allowed.test tunnelled (the test CA alone verifies it), header untouched; denied.test "
                       "logged denied/domain_not_allowed")

        # No SNI (curl sends none for an IP URL) and an IP literal as SNI are
        # refused with a TLS alert; the upstream behind that address sees nothing.
        before, log_before = self.snapshot(), len(self.access_lines())
        ip = UPSTREAMS[BOUND]
        p_nosni, p_ipsni = self.sandbox_many([
            ["curl", "-sS", "-k", "--max-time", "10", f"https://{ip}/step7-nosni-{self.nonce}"],
            ["sh", "-c", f"echo | openssl s_client -connect {ip}:443 -servername {ip} 2>&1"],
        ], env=no_proxy_env)
        check(p_nosni.returncode != 0, "transparent: a ClientHello without SNI was not refused")
        check("BEGIN CERTIFICATE" not in p_ipsni.stdout and "alert access denied" in p_ipsni.stdout,
              "transparent: an IP literal as SNI was not refused: " + p_ipsni.stdout[:600])
        time.sleep(0.3)
        seen = {h: self.new_events(before, h) for h in self.records}
        check(not any(seen.values()), f"an upstream saw a connection without a usable SNI: {seen}")
        refused = self.wait_access_lines(
            log_before, lambda e: e.get("ingress") == "denied" and e.get("reason") == "no_server_name", count=2)
        check(len(refused) >= 2, f"transparent: expected two denied/no_server_name log lines, got {refused}")
        details.append(f"no SNI: curl exit {p_nosni.returncode}; IP literal as SNI: refused; both logged "
                       "denied/no_server_name, upstream saw nothing")

        # An allowed name sent to another host's address: SNI and destination
        # disagree, so nothing is tunnelled.
        before, log_before = self.snapshot(), len(self.access_lines())
        p = self.sandbox(["curl", "-sS", "--max-time", "10", "--cacert", self.test_ca,
                          "--resolve", f"{ALLOWED}:443:{UPSTREAMS[DENIED]}",
                          f"https://{ALLOWED}/step7-mismatch-{self.nonce}"], env=no_proxy_env)
        check(p.returncode != 0, "transparent: SNI allowed.test sent to denied.test's address was tunnelled")
        time.sleep(0.3)
        seen = {h: self.new_events(before, h) for h in self.records}
        check(not any(seen.values()), f"an upstream saw the mismatched connection: {seen}")
        mismatch = self.wait_access_lines(log_before, lambda e: e.get("reason") == "destination_mismatch")
        check(len(mismatch) == 1, f"transparent: expected one denied/destination_mismatch line, got {mismatch}")
        details.append("SNI allowed.test to denied.test's address: refused (destination_mismatch), nothing reached")

        # An allowed name whose address has no TLS server (plain.test serves
        # port 80 only): the connection is refused, the client gets a TLS alert rather
        # than a reset, and the failure is logged as it is for CONNECT.
        log_before = len(self.access_lines())
        p = self.sandbox(["sh", "-c", f"echo | openssl s_client -connect {PLAIN_HTTP[PLAIN]}:443 "
                                      f"-servername {PLAIN} 2>&1"], env=no_proxy_env)
        check("alert internal error" in p.stdout,
              "transparent: an allowed host that cannot be reached got no TLS alert: " + p.stdout[:600])
        failed = self.wait_access_lines(log_before, lambda e: e.get("reason") == "upstream_refused")
        check(len(failed) == 1 and failed[0].get("ingress") == "tunnel" and failed[0].get("status") == 502
              and failed[0].get("host") == PLAIN and failed[0].get("port") == 443,
              f"transparent: expected one tunnel/502/upstream_refused line for {PLAIN}:443, got {failed}")
        details.append("allowed plain.test:443 (no TLS server there): TLS alert internal error, logged "
                       "tunnel 502 upstream_refused")
        return True, "; ".join(details)

    def step9_transparent_source_session(self):
        """A session pinned to the sandbox's address is the one the transparent
        listener uses for it; once deleted, the default session applies again."""
        self.install_redirect()
        vaults = json.loads(self.admin_curl("/v1/vaults").stdout)["vaults"]
        vault = [v for v in vaults if v["name"] == f"sandbox-{self.tag}"]
        check(len(vault) == 1, f"the bootstrap vault sandbox-{self.tag} is not listed")
        created = self.admin_curl("/v1/sessions", "POST",
                                  {"vault_ids": [vault[0]["id"]], "source": f"{SBX_IP}/32", "ttl_seconds": 600})
        session = json.loads(created.stdout)
        check("id" in session, f"creating a source-pinned session failed: {created.stdout[:200]}")
        proxy_ca = self.path("sandbox-env", "ca.pem")

        def fetch(label):
            marker = f"/{label}-{self.nonce}"
            p = self.sandbox(["curl", "-sS", "--max-time", "15", "--cacert", proxy_ca,
                              "--resolve", f"{BOUND}:443:{UPSTREAMS[BOUND]}", "-o", "/dev/null", "-w", "%{http_code}",
                              f"https://{BOUND}{marker}"], env={})
            check(p.returncode == 0 and p.stdout == "200", f"{label}: curl exit {p.returncode}, HTTP {p.stdout!r}")
            return marker

        self.expect_injected(fetch("step9-pinned"), session["id"], key=self.real_key)
        deleted = self.admin_curl(f"/v1/sessions/{session['id']}", "DELETE")
        check(deleted.returncode == 0, "deleting the pinned session failed")
        self.expect_injected(fetch("step9-unpinned"), "default", key=self.default_key)
        return True, ("a session pinned to the sandbox's address was chosen by source (its vault's key injected, "
                      "logged with its id); after DELETE the default session applied again")
