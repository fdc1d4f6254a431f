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

Exit codes: 0 all shown, 1 a failure (each named), 77 skipped (namespaces
cannot be created: not root, or `ip netns add` fails). With
VAULTGATE_REQUIRE_ROOT_TESTS set (CI sets it), a skip is a failure instead. Clean-up (processes,
namespaces with their veths and nftables table, the work directory) runs on
success, failure, SIGINT/SIGTERM and the overall deadline; a detached reaper
does it if this process is killed outright.
"""

import argparse
import hashlib
import json
import os
import secrets
import select
import signal
import shutil
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.parse

SKIP = 77
PYTHON = "/usr/bin/python3"
SANDBOX_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
OVERALL_DEADLINE_S = 150          # the alarm that ends a stuck run (CTest's own limit is 300 s)
REAPER_MAX_WAIT_S = 900           # the reaper gives up waiting for this process after that long

SBX_IP = "10.231.1.2"
GW_SBX_IP = "10.231.1.1"
GW_UP_IP = "10.231.2.1"
UP_SUBNET = "10.231.2.0/24"
UPSTREAMS = {                      # name -> address in the up namespace (TLS on 443)
    "api.bound.test": "10.231.2.10",
    "allowed.test": "10.231.2.11",
    "denied.test": "10.231.2.12",
}
BOUND, ALLOWED, DENIED = "api.bound.test", "allowed.test", "denied.test"
PLAIN = "plain.test"
HTTP_PORT = 80
PLAIN_HTTP = {                     # name -> address of a plain HTTP server on port 80
    PLAIN: "10.231.2.13",
    BOUND: UPSTREAMS[BOUND],
    DENIED: UPSTREAMS[DENIED],
}
ADDRESSES = dict(UPSTREAMS, **PLAIN_HTTP)    # every upstream name -> its address
PROXY_PORT, TRANSPARENT_PORT = 3128, 3129
ADMIN = "127.0.0.1:3190"
UNREDIRECTED_PORT = 8443           # api.bound.test also listens here; nothing redirects it


class StepFailed(Exception):
    pass


class SetupFailed(Exception):
    pass


class Skip(Exception):
    pass


class Deadline(Exception):
    pass


class Unavailable(Exception):
    """Transparent mode does not work at all (nothing listens, or a redirected
    request to the bound host gets no answer)."""
    what = "transparent listener not available"


class PlainHttpUnavailable(Unavailable):
    """The transparent listener gives a redirected plain-HTTP request no HTTP
    response at all (it does not read plain HTTP)."""
    what = "plain HTTP on the transparent listener not available"


def check(condition, message):
    if not condition:
        raise StepFailed(message)


def log(message=""):
    print(message, flush=True)


# --------------------------------------------------------------------------
# Clean-up shared by the test and its reaper.

def teardown(state):
    """Idempotent: kills what runs in our namespaces, deletes them, removes the work dir."""
    for ns in state.get("netns", []):
        if not os.path.exists(f"/run/netns/{ns}") and not os.path.exists(f"/var/run/netns/{ns}"):
            continue
        for table in state.get("nft", {}).get(ns, []):
            subprocess.run(["ip", "netns", "exec", ns, "nft", "delete", "table", "inet", table],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        for _ in range(3):
            out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10).stdout
            pids = [int(p) for p in out.split() if p.isdigit()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    workdir = state.get("workdir")
    if workdir and not state.get("keep") and os.path.isdir(workdir):
        shutil.rmtree(workdir, ignore_errors=True)


def reaper_main(state_path, fd):
    """Waits until the test process is gone (its pipe closes), then cleans up
    whatever it left, even after a SIGKILL."""
    deadline = time.monotonic() + REAPER_MAX_WAIT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 5)
        if ready and not os.read(fd, 64):
            break
    try:
        with open(state_path) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return        # the test cleaned up and removed the state file
    state["keep"] = False
    teardown(state)
    try:
        os.unlink(state_path)
    except OSError:
        pass


def start_reaper(state_path):
    """Double-forked and in its own session, so that a harness killing this
    process and its children does not kill the reaper too. Returns the write
    end of its pipe (not inherited by any child: os.pipe fds are not)."""
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            os.close(w)
            null = os.open(os.devnull, os.O_RDWR)
            for target in (0, 1, 2):
                os.dup2(null, target)
            for fd in range(3, 1024):
                if fd != r:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            reaper_main(state_path, r)
        finally:
            os._exit(0)
    os.close(r)
    os.waitpid(pid, 0)
    return w


# --------------------------------------------------------------------------
# The recording TLS upstreams (run inside the up namespace).

def upstream_main(conf_path):
    import http.server
    import threading

    with open(conf_path) as f:
        conf = json.load(f)
    lock = threading.Lock()

    def record(path, event):
        event["t"] = time.time()
        line = json.dumps(event) + "\n"
        with lock, open(path, "a") as out:
            out.write(line)
            out.flush()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "e2e-upstream"

        def log_message(self, *args):
            pass

        def reply(self, status, body, ctype):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def handle_any(self):
            srv = self.server
            body = b""
            length = self.headers.get("Content-Length", "")
            if length.isdigit():
                body = self.rfile.read(min(int(length), 1 << 20))
            record(srv.record_path, {
                "event": "request", "server": srv.name, "port": srv.server_address[1],
                "client": self.client_address[0], "sni": getattr(self.connection, "e2e_sni", None),
                "method": self.command, "path": self.path,
                "headers": [[k, v] for k, v in self.headers.items()], "body_len": len(body),
            })
            path = urllib.parse.urlsplit(self.path).path
            if srv.git_root and path.startswith("/repo.git/"):
                full = os.path.realpath(os.path.join(srv.git_root, path[len("/repo.git/"):]))
                if full.startswith(srv.git_root + os.sep) and os.path.isfile(full):
                    with open(full, "rb") as f:
                        data = f.read()
                    return self.reply(200, data, "text/plain" if full.endswith(("/info/refs", "/HEAD"))
                                      else "application/octet-stream")
                return self.reply(404, b"not found\n", "text/plain")
            # Never echoes what it received: the record file is the evidence.
            self.reply(200, json.dumps({"server": srv.name, "path": path}).encode(), "application/json")

        do_GET = do_POST = do_PUT = do_HEAD = handle_any

    class TLSServer(http.server.ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def server_bind(self):
            # HTTPServer.server_bind would look the address up in DNS, which
            # this namespace has none of.
            import socketserver
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = self.server_address[:2]

        def finish_request(self, request, client_address):
            record(self.record_path, {"event": "connect", "server": self.name,
                                      "port": self.server_address[1], "client": client_address[0]})
            request.settimeout(20)
            try:
                tls = self.ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                record(self.record_path, {"event": "tls_failed", "server": self.name, "error": str(e)})
                return
            try:
                self.RequestHandlerClass(tls, client_address, self)
            except OSError:
                pass
            finally:
                try:
                    tls.close()
                except OSError:
                    pass

    class PlainServer(TLSServer):
        def finish_request(self, request, client_address):
            record(self.record_path, {"event": "connect", "server": self.name,
                                      "port": self.server_address[1], "client": client_address[0]})
            request.settimeout(20)
            try:
                self.RequestHandlerClass(request, client_address, self)
            except OSError:
                pass

    def remember_sni(sock, name, _ctx):
        sock.e2e_sni = name

    servers = []
    for s in conf["servers"]:
        if not s.get("cert"):
            srv = PlainServer((s["addr"], s["port"]), Handler)
            srv.ctx, srv.name, srv.record_path, srv.git_root = None, s["name"], s["record"], None
            servers.append(srv)
            continue
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(s["cert"], s["key"])
        ctx.sni_callback = remember_sni
        srv = TLSServer((s["addr"], s["port"]), Handler)
        srv.ctx, srv.name, srv.record_path, srv.git_root = ctx, s["name"], s["record"], s.get("git_root")
        servers.append(srv)
    for srv in servers:
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    with open(conf["ready"], "w") as f:
        f.write("ready\n")
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    time.sleep(conf["lifetime"])    # bounded even if nobody stops it
    os._exit(0)


# --------------------------------------------------------------------------
# Scripts run inside the sandbox.

URLLIB_CLIENT = textwrap.dedent("""\
    import json, os, sys, urllib.request
    req = urllib.request.Request(os.environ["BACKEND_URL"] + sys.argv[1],
                                 headers={"x-api-key": os.environ["COMPOSIO_API_KEY"]})
    with urllib.request.urlopen(req, timeout=15) as r:
        print(json.dumps({"status": r.status, "headers": dict(r.headers), "body": r.read().decode()}))
""")

REQUESTS_CLIENT = textwrap.dedent("""\
    import json, os, sys, requests
    r = requests.get(os.environ["BACKEND_URL"] + sys.argv[1],
                     headers={"x-api-key": os.environ["COMPOSIO_API_KEY"]}, timeout=15)
    print(json.dumps({"status": r.status_code, "headers": dict(r.headers), "body": r.text,
                      "requests": requests.__version__, "file": requests.__file__}))
""")

# CONNECT through the proxy named by HTTPS_PROXY; prints the proxy's answer,
# and, on 200, the certificate the far end presents, verified against CAFILE
# alone.
CONNECT_CLIENT = textwrap.dedent("""\
    import base64, hashlib, json, os, socket, ssl, sys, urllib.parse
    target, sni, cafile = sys.argv[1], sys.argv[2], sys.argv[3]
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
    head = "CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n" % (target, target)
    if proxy.username is not None:
        cred = urllib.parse.unquote(proxy.username) + ":" + urllib.parse.unquote(proxy.password or "")
        head += "Proxy-Authorization: Basic " + base64.b64encode(cred.encode()).decode() + "\\r\\n"
    s.sendall((head + "\\r\\n").encode())
    data = b""
    while b"\\r\\n\\r\\n" not in data and len(data) < 65536:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\\r\\n\\r\\n")
    lines = head.decode("latin-1").split("\\r\\n")
    status = int(lines[0].split()[1]) if len(lines[0].split()) > 1 else 0
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    out = {"status": status, "headers": headers}
    if status == 200:
        ctx = ssl.create_default_context(cafile=cafile)
        try:
            tls = ctx.wrap_socket(s, server_hostname=sni)
            der = tls.getpeercert(binary_form=True)
            out["cert_sha256"] = hashlib.sha256(der).hexdigest()
            out["issuer"] = dict(x[0] for x in tls.getpeercert()["issuer"])
            out["verified"] = True
        except ssl.SSLError as e:
            out["verified"] = False
            out["tls_error"] = str(e)
    else:
        n = int(headers.get("content-length", "0") or 0)
        while len(rest) < n:
            chunk = s.recv(4096)
            if not chunk:
                break
            rest += chunk
        out["body"] = rest.decode("utf-8", "replace")
    print(json.dumps(out))
""")


# --------------------------------------------------------------------------

def run(cmd, timeout=20, check_rc=True, input_text=None, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input_text, env=env)
    if check_rc and p.returncode != 0:
        raise SetupFailed(f"`{' '.join(cmd)}` exited {p.returncode}: {(p.stderr or p.stdout).strip()}")
    return p


def header_values(event, name):
    """Values of the header NAME in any letter case, and of its `_` for `-` form."""
    wanted = {name.lower(), name.lower().replace("-", "_")}
    return [v for k, v in event["headers"] if k.lower() in wanted]


class SandboxTest:
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
        p = self.spawn("up", [PYTHON, os.path.abspath(__file__), "--upstream-server", self.path("upstreams.json")],
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
        run([self.vaultgate, "check-config", "--config", self.config])

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
        # port 80 only): the dial fails, the client gets a TLS alert rather
        # than a reset, and the failure is logged as it is for CONNECT.
        log_before = len(self.access_lines())
        p = self.sandbox(["sh", "-c", f"echo | openssl s_client -connect {PLAIN_HTTP[PLAIN]}:443 "
                                      f"-servername {PLAIN} 2>&1"], env=no_proxy_env)
        check("alert internal error" in p.stdout,
              "transparent: an allowed host that cannot be reached got no TLS alert: " + p.stdout[:600])
        failed = self.wait_access_lines(log_before, lambda e: e.get("reason") == "upstream_unreachable")
        check(len(failed) == 1 and failed[0].get("ingress") == "tunnel" and failed[0].get("status") == 502
              and failed[0].get("host") == PLAIN and failed[0].get("port") == 443,
              f"transparent: expected one tunnel/502/upstream_unreachable line for {PLAIN}:443, got {failed}")
        details.append("allowed plain.test:443 (no TLS server there): TLS alert internal error, logged "
                       "tunnel 502 upstream_unreachable")
        return True, "; ".join(details)

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vaultgate", help="the vaultgate binary")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, records)")
    parser.add_argument("--require-transparent", action="store_true",
                        help="fail (not skip) steps 7 and 8 when the transparent listener does not work, "
                             "or does not read plain HTTP")
    parser.add_argument("--upstream-server", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.upstream_server:
        upstream_main(args.upstream_server)
        return 0
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
