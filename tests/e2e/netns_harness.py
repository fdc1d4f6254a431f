"""The sandbox end-to-end test's fixture: the namespaces, the test PKI, the
upstreams, vaultgate and its bootstrap, and what the steps read back (upstream
records, access-log lines)."""

import hashlib
import json
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import textwrap
import time
import urllib.parse

import netns_upstream
from netns_common import (ADDRESSES, ADMIN, ALLOWED, BOUND, GW_SBX_IP, GW_UP_IP, HTTP_PORT, PLAIN,
                          PLAIN_HTTP, PROXY_PORT, PYTHON, SANDBOX_PATH, SBX_IP, SetupFailed, Skip,
                          StepFailed, TRANSPARENT_PORT, UNREDIRECTED_PORT, UPSTREAMS, Unavailable,
                          check, header_values, log, run, teardown)


class NetnsHarness:
    """The namespaces, processes and records every step works with."""

    def __init__(self, vaultgate, keep, require_transparent):
        self.vaultgate = os.path.abspath(vaultgate)
        self.keep = keep
        self.require_transparent = require_transparent
        self.tag = "vg" + secrets.token_hex(3)
        self.ns = {role: f"{self.tag}-{role}" for role in ("sbx", "gw", "up")}
        self.if_gw_sbx, self.if_sbx = f"{self.tag}gs", f"{self.tag}sg"
        self.if_gw_up, self.if_up = f"{self.tag}gu", f"{self.tag}ug"
        self.nft_table = f"{self.tag}_redirect"
        self.nonce = secrets.token_hex(4)
        # Two real keys, so the upstream's record shows which vault injected:
        # the bootstrapper's (explicit proxy with the session in HTTPS_PROXY)
        # or the config's default session (transparent mode).
        self.real_key = "real-composio-" + secrets.token_hex(20)
        self.default_key = "real-default-" + secrets.token_hex(20)
        self.workdir = tempfile.mkdtemp(prefix=f"{self.tag}-")
        os.chmod(self.workdir, 0o755)
        self.state = {"netns": [], "nft": {}, "workdir": self.workdir, "keep": keep}
        self.state_path = os.path.join(self.workdir, "cleanup-state.json")
        self.procs = []
        self.results = []        # (step, status, seconds, detail)
        self.boot_env = {}
        self.timings = {}

    # ---- bookkeeping -----------------------------------------------------
    def save_state(self):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f)
        os.replace(tmp, self.state_path)

    def path(self, *parts):
        return os.path.join(self.workdir, *parts)

    def in_ns(self, role, cmd):
        return ["ip", "netns", "exec", self.ns[role]] + cmd

    def cleanup(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        teardown(self.state)
        try:
            os.unlink(self.state_path)
        except OSError:
            pass
        leftovers = [ns for ns in self.state["netns"]
                     if ns in run(["ip", "netns", "list"], check_rc=False).stdout.split()]
        if leftovers:
            log(f"WARNING: namespaces left behind: {leftovers}")

    # ---- topology --------------------------------------------------------
    def create_namespaces(self):
        for role in ("sbx", "gw", "up"):
            ns = self.ns[role]
            p = run(["ip", "netns", "add", ns], check_rc=False)
            if p.returncode != 0:
                raise Skip(f"`ip netns add {ns}` failed: {p.stderr.strip()}")
            self.state["netns"].append(ns)
            self.save_state()
        sbx, gw, up = self.ns["sbx"], self.ns["gw"], self.ns["up"]
        # The veths are made inside the namespaces: nothing touches the host's.
        run(["ip", "-n", gw, "link", "add", self.if_gw_sbx, "type", "veth", "peer", "name", self.if_sbx, "netns", sbx])
        run(["ip", "-n", gw, "link", "add", self.if_gw_up, "type", "veth", "peer", "name", self.if_up, "netns", up])
        run(["ip", "-n", gw, "addr", "add", f"{GW_SBX_IP}/24", "dev", self.if_gw_sbx])
        run(["ip", "-n", gw, "addr", "add", f"{GW_UP_IP}/24", "dev", self.if_gw_up])
        run(["ip", "-n", sbx, "addr", "add", f"{SBX_IP}/24", "dev", self.if_sbx])
        for addr in sorted(set(ADDRESSES.values())):
            run(["ip", "-n", up, "addr", "add", f"{addr}/24", "dev", self.if_up])
        for ns, ifs in ((sbx, [self.if_sbx]), (gw, [self.if_gw_sbx, self.if_gw_up]), (up, [self.if_up])):
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            for i in ifs:
                run(["ip", "-n", ns, "link", "set", i, "up"])
        run(["ip", "-n", sbx, "route", "add", "default", "via", GW_SBX_IP])
        # The upstreams can answer the sandbox: if the gateway forwarded, direct
        # connections would work (step 5's control run shows it), so what
        # stops them is the gateway alone.
        run(["ip", "-n", up, "route", "add", "default", "via", GW_UP_IP])
        self.set_forwarding(False)

    def set_forwarding(self, on):
        run(self.in_ns("gw", ["sysctl", "-q", "-w", f"net.ipv4.ip_forward={1 if on else 0}"]))
        check(self.forwarding() == on, f"could not set ip_forward={int(on)} in the gateway namespace")

    def forwarding(self):
        out = run(self.in_ns("gw", ["sysctl", "-n", "net.ipv4.ip_forward"])).stdout.strip()
        return out == "1"

    # ---- certificates, keys, repo ---------------------------------------
    def make_pki(self):
        d = self.path("testca")
        os.mkdir(d)
        ca_conf = self.path("testca", "ca.cnf")
        with open(ca_conf, "w") as f:
            f.write(textwrap.dedent("""\
                [req]
                distinguished_name = dn
                prompt = no
                [dn]
                CN = vaultgate e2e upstream test CA
                [v3_ca]
                basicConstraints = critical, CA:TRUE
                keyUsage = critical, keyCertSign, cRLSign
                subjectKeyIdentifier = hash
            """))
        self.test_ca = os.path.join(d, "ca.pem")
        ca_key = os.path.join(d, "ca-key.pem")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run(["openssl", "req", "-x509", *ec, "-keyout", ca_key, "-out", self.test_ca, "-days", "2",
             "-config", ca_conf, "-extensions", "v3_ca"])
        self.leaf = {}
        for host in UPSTREAMS:
            key, csr, cert, ext = (os.path.join(d, f"{host}.{s}") for s in ("key", "csr", "pem", "ext"))
            with open(ext, "w") as f:
                f.write(f"subjectAltName = DNS:{host}\nbasicConstraints = critical, CA:FALSE\n"
                        "keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n"
                        "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n")
            run(["openssl", "req", "-new", *ec, "-keyout", key, "-out", csr, "-subj", f"/CN={host}"])
            run(["openssl", "x509", "-req", "-in", csr, "-CA", self.test_ca, "-CAkey", ca_key, "-set_serial",
                 str(int.from_bytes(secrets.token_bytes(8), "big")), "-days", "2", "-out", cert, "-extfile", ext])
            with open(cert) as f:
                der = ssl.PEM_cert_to_DER_cert(f.read())
            self.leaf[host] = {"key": key, "cert": cert, "sha256": hashlib.sha256(der).hexdigest()}
        # vaultgate's own CA, made by vaultgate.
        run([self.vaultgate, "ca", "init", "--out", self.path("proxyca"), "--name", f"vaultgate e2e {self.tag}"])
        secret_files = {"master.key": secrets.token_bytes(32), "admin.token": secrets.token_hex(24).encode(),
                        "default-composio-key": self.default_key.encode()}
        for name, content in secret_files.items():
            fd = os.open(self.path(name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(content)

    def make_git_repo(self):
        self.git_sha = None
        if shutil.which("git") is None:
            return
        work, bare = self.path("git-work"), self.path("git", "repo.git")
        genv = {"PATH": SANDBOX_PATH, "HOME": self.workdir, "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
                "GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.invalid"}
        run(["git", "init", "-q", "--bare", "--initial-branch=main", bare], env=genv)
        run(["git", "init", "-q", "--initial-branch=main", work], env=genv)
        with open(os.path.join(work, "README"), "w") as f:
            f.write(f"served over dumb HTTP through vaultgate ({self.nonce})\n")
        run(["git", "-C", work, "add", "README"], env=genv)
        run(["git", "-C", work, "commit", "-q", "-m", "e2e"], env=genv)
        run(["git", "-C", work, "push", "-q", bare, "main"], env=genv)
        run(["git", "--git-dir", bare, "update-server-info"], env=genv)
        self.git_sha = run(["git", "--git-dir", bare, "rev-parse", "refs/heads/main"], env=genv).stdout.strip()

    # ---- processes -------------------------------------------------------
    def spawn(self, role, cmd, name):
        out = open(self.path(f"{name}.out"), "w")
        err = open(self.path(f"{name}.err"), "w")
        p = subprocess.Popen(self.in_ns(role, cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             cwd=self.workdir)
        out.close()
        err.close()
        self.procs.append(p)
        return p

    def wait_until(self, what, predicate, proc=None, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if proc is not None and proc.poll() is not None:
                raise SetupFailed(f"{what}: the process exited with {proc.returncode}")
            time.sleep(0.1)
        raise SetupFailed(f"{what}: not ready after {timeout:.0f} s")

    def start_upstreams(self):
        os.mkdir(self.path("records"))
        self.records = {h: self.path("records", f"{h}.jsonl") for h in ADDRESSES}
        servers = []
        for host, addr in UPSTREAMS.items():
            servers.append({"name": host, "addr": addr, "port": 443, "cert": self.leaf[host]["cert"],
                            "key": self.leaf[host]["key"], "record": self.records[host],
                            "git_root": self.path("git", "repo.git") if host == BOUND and self.git_sha else None})
        servers.append(dict(servers[0], port=UNREDIRECTED_PORT, git_root=None))
        for host, addr in PLAIN_HTTP.items():
            servers.append({"name": host, "addr": addr, "port": HTTP_PORT, "record": self.records[host]})
        conf = {"servers": servers, "ready": self.path("upstreams.ready"), "lifetime": 300}
        with open(self.path("upstreams.json"), "w") as f:
            json.dump(conf, f)
        p = self.spawn("up", [PYTHON, os.path.abspath(netns_upstream.__file__), self.path("upstreams.json")],
                       "upstreams")
        self.wait_until("upstream servers", lambda: os.path.exists(conf["ready"]), p)

    def write_config(self):
        resolve = "\n".join(f"    {h}: {a}" for h, a in ADDRESSES.items())
        config = textwrap.dedent(f"""\
            listen:
              proxy: {GW_SBX_IP}:{PROXY_PORT}
              transparent: 0.0.0.0:{TRANSPARENT_PORT}
              admin: {ADMIN}
            ca:
              cert: {self.path("proxyca", "ca.pem")}
              key: {self.path("proxyca", "ca-key.pem")}
            upstream:
              ca_file: {self.test_ca}
              resolve:
            RESOLVE
            store:
              path: {self.path("vaultgate.db")}
              master_key_file: {self.path("master.key")}
            admin:
              token_file: {self.path("admin.token")}
            log:
              access: {self.path("access.log")}
              level: info
            # The default session: clients without Proxy-Authorization (the
            # transparent listener's) get this vault. The bootstrapper makes
            # its own vault and session through the admin API.
            vaults:
              - name: transparent-default
                credentials:
                  COMPOSIO_API_KEY: {{ file: {self.path("default-composio-key")} }}
                services:
                  - host: {BOUND}
                    port: 443
                    auth: {{ type: api-key, header: x-api-key, key: COMPOSIO_API_KEY }}
            sessions:
              default: {{ vaults: [transparent-default], egress_policy: default }}
            egress_policies:
              default:
                allow_https: true
                # Plain http:// (step 8, through the transparent listener):
                # a bare host stands for port 80 there, so plain.test is
                # allowed on 80, and the bound host on its port 80 too, to
                # show that plain HTTP never carries an injected key.
                allow_http: true
                allow_package_managers: false
                allowed_domains: [{ALLOWED}, {PLAIN}, "{BOUND}:{HTTP_PORT}"]
                # Empty on purpose: names pinned by upstream.resolve are exempt
                # from the private-address rule, and covering the upstream subnet
                # here would let the sandbox CONNECT to denied.test by IP literal.
                allowed_cidrs: []
        """).replace("RESOLVE", resolve)
        self.config = self.path("vaultgate.yaml")
        with open(self.config, "w") as f:
            f.write(config)
        # The listen addresses live in the gateway's namespace, not this one.
        run([self.vaultgate, "check-config", "--config", self.config, "--no-bind-check"])

    def admin_curl(self, path, method="GET", body=None):
        with open(self.path("admin.token")) as f:
            token = f.read().strip()
        extra = ["-X", method]
        if body is not None:
            extra += ["-H", "Content-Type: application/json", "--data", json.dumps(body)]
        return run(self.in_ns("gw", ["curl", "-sS", "--max-time", "5", "-H", f"Authorization: Bearer {token}"] +
                              extra + [f"http://{ADMIN}{path}"]), check_rc=False)

    def start_vaultgate(self):
        p = self.spawn("gw", [self.vaultgate, "serve", "--config", self.config], "vaultgate")
        self.vaultgate_proc = p
        self.wait_until("vaultgate admin /healthz",
                        lambda: '"ok"' in self.admin_curl("/healthz").stdout, p)
        self.wait_until("vaultgate proxy listener", lambda: self.listening(PROXY_PORT), p)

    def listening(self, port):
        out = run(self.in_ns("gw", ["ss", "-Hltn", f"sport = :{port}"]), check_rc=False).stdout
        return bool(out.strip())

    def bootstrap(self):
        platform_env = {"BACKEND_URL": f"https://{BOUND}", "COMPOSIO_API_KEY": self.real_key}
        out_dir = self.path("sandbox-env")
        p = run(self.in_ns("gw", [self.vaultgate, "bootstrap", "--admin", f"http://{ADMIN}", "--token-file",
                                  self.path("admin.token"), "--vault", f"sandbox-{self.tag}", "--out-dir", out_dir]),
                input_text=json.dumps(platform_env))
        self.boot_stdout, self.boot_stderr, self.boot_dir = p.stdout, p.stderr, out_dir
        env = {}
        for line in p.stdout.splitlines():
            if line.strip():
                name, sep, value = line.partition("=")
                if not sep:
                    raise SetupFailed(f"bootstrap printed a line that is no NAME=value: {line!r}")
                env[name] = value
        self.boot_env = env
        proxy = urllib.parse.urlsplit(env.get("HTTPS_PROXY", ""))
        self.boot_session = urllib.parse.unquote(proxy.username or "")
        log(f"  bootstrap printed {len(env)} variables: {', '.join(sorted(env))}")
        log(f"  COMPOSIO_API_KEY in the sandbox = {env.get('COMPOSIO_API_KEY')!r}")
        log(f"  HTTPS_PROXY = http://{self.boot_session}:<token>@{proxy.hostname}:{proxy.port}")

    # ---- sandbox side ----------------------------------------------------
    def sandbox(self, argv, env=None, timeout=25):
        """Runs ARGV in the sandbox namespace with exactly PATH plus ENV (the
        bootstrapper's env unless given)."""
        variables = {"PATH": SANDBOX_PATH}
        variables.update(self.boot_env if env is None else env)
        cmd = self.in_ns("sbx", ["env", "-i"] + [f"{k}={v}" for k, v in variables.items()] + argv)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    def sandbox_many(self, argvs, env=None, timeout=25):
        """Like sandbox(), for several commands at once (failing connections
        time out, so they run side by side)."""
        variables = {"PATH": SANDBOX_PATH}
        variables.update(self.boot_env if env is None else env)
        prefix = self.in_ns("sbx", ["env", "-i"] + [f"{k}={v}" for k, v in variables.items()])
        procs = [subprocess.Popen(prefix + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for argv in argvs]
        results = []
        try:
            for argv, proc in zip(argvs, procs):
                out, err = proc.communicate(timeout=timeout)
                results.append(subprocess.CompletedProcess(argv, proc.returncode, out, err))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        return results

    def gw_dropped(self):
        """The gateway's count of packets it would not forward (IP InAddrErrors)."""
        lines = [l.split() for l in run(self.in_ns("gw", ["cat", "/proc/net/snmp"])).stdout.splitlines()
                 if l.startswith("Ip:")]
        return int(dict(zip(lines[0][1:], lines[1][1:]))["InAddrErrors"])

    def events(self, host):
        try:
            with open(self.records[host]) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def snapshot(self):
        return {h: len(self.events(h)) for h in self.records}

    def new_events(self, before, host):
        return self.events(host)[before[host]:]

    def requests_for(self, host, marker, port=443):
        return [e for e in self.events(host)
                if e["event"] == "request" and marker in e["path"] and e["port"] == port]

    def access_entries(self, marker, wait=3.0):
        deadline = time.monotonic() + wait
        while True:
            entries = []
            try:
                with open(self.path("access.log")) as f:
                    for line in f:
                        try:
                            entry = json.loads(line)
                        except ValueError:
                            continue
                        if marker in json.dumps(entry):
                            entries.append(entry)
            except FileNotFoundError:
                pass
            if entries or time.monotonic() >= deadline:
                return entries
            time.sleep(0.1)

    def mask(self, value):
        return {self.real_key: "<REAL KEY>", self.default_key: "<DEFAULT SESSION KEY>"}.get(value, value)

    def expect_injected(self, marker, session, client_view="", key=None):
        """The bound upstream got exactly one x-api-key, the real one, over a
        connection from the gateway, with the right SNI."""
        key = self.real_key if key is None else key
        reqs = []
        deadline = time.monotonic() + 2
        while not reqs and time.monotonic() < deadline:
            reqs = self.requests_for(BOUND, marker)
            if not reqs:
                time.sleep(0.05)
        check(len(reqs) == 1, f"{BOUND} recorded {len(reqs)} requests for {marker}, expected 1")
        e = reqs[0]
        keys = header_values(e, "x-api-key")
        check(keys == [key], f"{BOUND} received x-api-key {[self.mask(k) for k in keys]}, "
                             f"expected exactly {self.mask(key)}")
        check(e["sni"] == BOUND, f"{BOUND} saw SNI {e['sni']!r}")
        check(e["client"] == GW_UP_IP, f"{BOUND} was reached from {e['client']}, not from the gateway")
        placeholder = self.boot_env.get("COMPOSIO_API_KEY", "vaultgate-placeholder")
        check(not any(placeholder in v for _, v in e["headers"]), f"{BOUND} received the placeholder too")
        check(not header_values(e, "proxy-authorization"), f"{BOUND} received a Proxy-Authorization header")
        check(self.real_key not in client_view and self.default_key not in client_view,
              "the client saw a real key in the response")
        entries = self.access_entries(marker)
        check(entries, f"no access-log line for {marker}")
        entry = entries[-1]
        check(entry.get("ingress") == "mitm" and entry.get("status") == 200,
              f"access log: ingress {entry.get('ingress')!r}, status {entry.get('status')!r}; expected mitm, 200")
        if session is not None:
            check(entry.get("session") == session,
                  f"access log: session {entry.get('session')!r}, expected {session!r}")
        check(entry.get("client") == SBX_IP, f"access log: client {entry.get('client')!r}, expected {SBX_IP}")
        check(self.real_key not in json.dumps(entries) and self.default_key not in json.dumps(entries),
              "the access log holds a real key")
        return e, entry

    # ---- the steps -------------------------------------------------------

    def setup(self):
        t0 = time.monotonic()
        self.create_namespaces()
        self.make_pki()
        self.make_git_repo()
        self.start_upstreams()
        self.write_config()
        self.start_vaultgate()
        self.bootstrap()
        self.timings["setup"] = time.monotonic() - t0

    def run_step(self, name, fn):
        t0 = time.monotonic()
        try:
            out = fn()
            if isinstance(out, tuple):
                ok, detail = out
                status = "PASS" if ok else "SKIPPED"
            else:
                status, detail = "PASS", out
        except StepFailed as e:
            status, detail = "FAIL", str(e)
        except Unavailable as e:
            status = "FAIL" if self.require_transparent else "SKIPPED"
            detail = f"{e.what}: {e}"
        except (subprocess.TimeoutExpired, SetupFailed, OSError, ValueError, KeyError) as e:
            status, detail = "FAIL", f"{type(e).__name__}: {e}"
        dt = time.monotonic() - t0
        self.results.append((name, status, dt, detail))
        log(f"{status:7} {name} ({dt:.1f} s): {detail}")

    def dump_logs(self):
        for name in ("vaultgate.err", "vaultgate.out", "access.log", "upstreams.err"):
            try:
                with open(self.path(name)) as f:
                    text = f.read()
            except OSError:
                continue
            text = text.replace(self.real_key, "<REAL KEY>").replace(self.default_key, "<DEFAULT SESSION KEY>")
            tail = "\n".join(text.splitlines()[-25:])
            log(f"--- {name} (last lines) ---\n{tail}")
