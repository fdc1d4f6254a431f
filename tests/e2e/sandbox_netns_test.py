#!/usr/bin/python3
"""Sandbox end-to-end test: real clients in a network namespace whose only way
out is vaultgate.

Three network namespaces, every name carrying a random tag so parallel runs
never collide, and every address private to them:

    <tag>-sbx (sandbox)        <tag>-gw (vaultgate)                 <tag>-up (upstreams)
    10.231.1.2 ----veth---- 10.231.1.1        10.231.2.1 ----veth---- 10.231.2.10  api.bound.test  (443, 8443, 80)
    default via 10.231.1.1     proxy       :3128                        10.231.2.11  allowed.test    (443)
    lo + one veth, nothing     transparent :3129                        10.231.2.12  denied.test     (443, 80)
    else                       admin 127.0.0.1:3190                     10.231.2.13  plain.test      (80)
                               net.ipv4.ip_forward = 0                  default via 10.231.2.1

The upstreams on 443 and 8443 are TLS servers (certificates from a test CA
made with the openssl CLI), those on 80 plain HTTP servers; all record every
TCP connection and every request with its headers. vaultgate pins the four
names to them with upstream.resolve and trusts the test CA with
upstream.ca_file. `vaultgate bootstrap` turns a
Composio-shaped env holding the real key into the sandbox's env, and every
sandbox client runs with exactly that env (`env -i`, the printed variables and
PATH). The config's default session (for the transparent listener) holds a
second real key, so each record shows which session injected. What is shown:

  0. The sandbox env, the bootstrap output and its files hold no real key.
  1. curl to the bound host: the upstream receives the real key, exactly once,
     from the gateway, under the bootstrap session.
  2. Python urllib and Python requests (Debian's): the same.
  3. git ls-remote over dumb HTTP through the proxy gets a real key injected.
     git's default proxy auth ("anyauth") sends no credentials until a 407,
     which a proxy with a default session never sends, so git rides the
     default session; with GIT_HTTP_PROXY_AUTHMETHOD=basic it uses the
     bootstrap session (checked strictly).
  4. An allowed host is tunnelled: the client sees the upstream's own
     certificate (byte for byte, verified against the test CA alone) and the
     upstream sees the placeholder; the bound host, as a control, presents a
     vaultgate-minted certificate.
  5. Direct connections that ignore the proxy fail, the gateway counts the
     dropped packets and the upstreams see no connection at all; a control run
     with forwarding switched on for a moment shows the topology would carry
     them (with the placeholder only).
  6. A denied host is refused with 403 from the proxy and never contacted; so
     are its IP literal, the admin API and the proxy itself.
  7. Transparent mode: an nftables redirect in the gateway sends the
     sandbox's TCP 443 (and 80, for step 8) to the transparent listener; a
     client with no proxy settings still gets the real key injected, an
     allowed host is tunnelled, a denied one and an unredirected port reach
     nothing, and an allowed host that cannot be reached gets a TLS alert and
     a 502 log line. If the listener does
     not work at all (nothing listens, or the redirected request to the bound
     host fails) the step is SKIPPED with the reason, unless
     --require-transparent is given; its other checks always count.
  8. Transparent plain HTTP: through the same redirect, with no proxy
     settings, an http:// request to plain.test (allowed, allow_http is on in
     the default session's policy) is forwarded in the clear with the
     client's own header; the bound host over plain HTTP (its port 80 allowed
     too) is forwarded without injection or refused, and never sees a real
     key; a host not allowed gets a 403 with X-Vaultgate-Reason and is never
     contacted, and so is a denied address behind an allowed Host name. If
     the first request gets no HTTP response at all (closed, reset, or only a
     TLS alert: a vaultgate whose listener reads only TLS) and went nowhere,
     the step is SKIPPED with the reason, unless --require-transparent is
     given.

The files: netns_common.py (names, addresses, clean-up), netns_upstream.py
(the recording upstreams), netns_harness.py (namespaces, vaultgate, records),
and the steps in netns_proxy_steps.py (0-6), netns_transparent_steps.py (7, 9)
and netns_plain_http_steps.py (8).

Exit codes: 0 all shown, 1 a failure (each named), 77 skipped (namespaces
cannot be created: not root, or `ip netns add` fails). With
VAULTGATE_REQUIRE_ROOT_TESTS set (CI sets it), a skip is a failure instead. Clean-up (processes,
namespaces with their veths and nftables table, the work directory) runs on
success, failure, SIGINT/SIGTERM and the overall deadline; a detached reaper
does it if this process is killed outright.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

from netns_common import (OVERALL_DEADLINE_S, PYTHON, SKIP, Deadline, SetupFailed, Skip, StepFailed, log,
                          start_reaper)
from netns_harness import NetnsHarness
from netns_plain_http_steps import PlainHttpSteps
from netns_proxy_steps import ProxySteps
from netns_transparent_steps import TransparentSteps


class SandboxTest(NetnsHarness, ProxySteps, TransparentSteps, PlainHttpSteps):
    def steps(self):
        self.run_step("0 sandbox env holds only placeholders", self.step0_env)
        self.run_step("1 curl to the bound host gets the real key injected", self.step1_curl)
        self.run_step("2a Python urllib", self.step2_urllib)
        self.run_step("2b Python requests", self.step2_requests)
        self.run_step("3 git ls-remote over HTTPS through the proxy", self.step3_git)
        self.run_step("4 allowed host is tunnelled", self.step4_tunnel)
        self.run_step("5 direct connections that ignore the proxy fail", self.step5_direct)
        self.run_step("6 denied host is refused", self.step6_denied)
        self.run_step("7 transparent mode (nftables redirect, no proxy settings)", self.step7_transparent)
        self.run_step("8 transparent plain http (port 80 redirected, no proxy settings)", self.step8_plain_http)
        self.run_step("9 transparent mode picks the session by source address", self.step9_transparent_source_session)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vaultgate", help="the vaultgate binary")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, records)")
    parser.add_argument("--require-transparent", action="store_true",
                        help="fail (not skip) steps 7 and 8 when the transparent listener does not work, "
                             "or does not read plain HTTP")
    args = parser.parse_args()
    if not args.vaultgate or not os.access(args.vaultgate, os.X_OK):
        log(f"FAIL: --vaultgate {args.vaultgate!r} is not an executable")
        return 1

    if os.geteuid() != 0:
        log("SKIPPED: the sandbox end-to-end test needs root to create network namespaces (ip netns)")
        return SKIP
    if shutil.which("ip") is None:
        log("SKIPPED: iproute2's `ip` is not installed, so no network namespaces can be created")
        return SKIP
    missing = [t for t in ("curl", "openssl", "nft", "ss", "sysctl") if shutil.which(t) is None]
    if missing or not os.access(PYTHON, os.X_OK):
        log(f"FAIL: missing tools: {missing + ([] if os.access(PYTHON, os.X_OK) else [PYTHON])} "
            "(scripts/install-deps.sh installs them)")
        return 1

    def on_signal(signum, _frame):
        raise Deadline(f"signal {signum}")

    def on_alarm(_signum, _frame):
        raise Deadline(f"the run took longer than {OVERALL_DEADLINE_S} s")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(OVERALL_DEADLINE_S)

    t_start = time.monotonic()
    test = SandboxTest(args.vaultgate, args.keep, args.require_transparent)
    test.save_state()
    reaper_fd = start_reaper(test.state_path)
    log(f"sandbox e2e: tag {test.tag}, namespaces {', '.join(test.ns.values())}, work dir {test.workdir}")
    rc = 1
    try:
        try:
            test.setup()
            log(f"setup done in {test.timings['setup']:.1f} s")
            test.steps()
        except Skip as e:
            log(f"SKIPPED: network namespaces cannot be created here: {e}")
            rc = SKIP
        except (SetupFailed, StepFailed, subprocess.TimeoutExpired, OSError) as e:
            log(f"FAIL setup: {e}")
            test.results.append(("setup", "FAIL", 0.0, str(e)))
        except Deadline as e:
            log(f"FAIL: stopped: {e}")
            test.results.append(("interrupted", "FAIL", 0.0, str(e)))
        if rc != SKIP:
            failed = [r for r in test.results if r[1] == "FAIL"]
            if failed:
                test.dump_logs()
            total = time.monotonic() - t_start
            log(f"\nsummary ({total:.1f} s):")
            for name, status, dt, _ in test.results:
                log(f"  {status:7} {dt:5.1f} s  {name}")
            if failed:
                log(f"FAILED: {', '.join(r[0] for r in failed)}")
                rc = 1
            else:
                rc = 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        test.cleanup()
        os.close(reaper_fd)
        if args.keep:
            log(f"kept {test.workdir}")
    return rc


if __name__ == "__main__":
    code = main()
    if code == SKIP and os.environ.get("VAULTGATE_REQUIRE_ROOT_TESTS"):
        log("FAIL: VAULTGATE_REQUIRE_ROOT_TESTS is set, so this test must run, not skip")
        code = 1
    sys.exit(code)
