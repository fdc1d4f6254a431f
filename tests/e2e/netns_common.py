"""What the sandbox end-to-end test shares: the topology's names and
addresses, its outcomes, clean-up (also by a detached reaper), and the
scripts it runs inside the sandbox."""

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time

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
