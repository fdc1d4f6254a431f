"""What the minted-credential tests share: a test PKI and RSA keys made with
python3-cryptography, the local origins as child processes, `vaultgate serve`
with its admin API, requests through the proxy, and the scan of every log for
values that must stay secret. Everything listens on 127.0.0.1 port 0."""

import base64
import http.client
import json
import os
import secrets
import select
import shutil
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import datetime
import unittest
from urllib.parse import unquote, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
START_TIMEOUT_S = 20


def vaultgate_binary():
    """The binary CTest passes as `--vaultgate PATH` (removed from argv for unittest)."""
    if "--vaultgate" in sys.argv:
        i = sys.argv.index("--vaultgate")
        path = sys.argv[i + 1]
        del sys.argv[i:i + 2]
        return os.path.abspath(path)
    return os.environ.get("VAULTGATE_BINARY", "")


# ---- keys and certificates ---------------------------------------------

def rsa_key(bits=2048, pkcs8=False):
    """(private PEM text, public PEM text); PKCS#1 as GitHub issues app keys, PKCS#8 as Google does."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    fmt = serialization.PrivateFormat.PKCS8 if pkcs8 else serialization.PrivateFormat.TraditionalOpenSSL
    private = key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def one_line_pem(pem):
    """A PEM key as a credential value holds it: on one line, each line break
    written as the two characters \\n (as in a JSON string or an env file)."""
    return pem.strip("\n").replace("\n", "\\n")


def key_body_lines(pem):
    """The base64 lines of a PEM key: what a leak of the key would show."""
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


def make_pki(directory, names):
    """A test CA and one leaf for every name; returns (ca.pem, leaf.pem, leaf-key.pem)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vaultgate mint test origin CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = [os.path.join(directory, n) for n in ("origin-ca.pem", "origin.pem", "origin-key.pem")]
    write_file(paths[0], ca.public_bytes(serialization.Encoding.PEM).decode())
    write_file(paths[1], leaf.public_bytes(serialization.Encoding.PEM).decode())
    write_file(paths[2], leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()).decode(), private=True)
    return paths


def write_file(path, text, private=False):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


# ---- child processes -----------------------------------------------------

def read_line_until(stream, prefix, proc, what):
    """The first line of STREAM that starts with PREFIX; lines before it are returned too."""
    seen = []
    buffer = b""
    fd = stream.fileno()
    deadline = START_TIMEOUT_S
    while True:
        ready, _, _ = select.select([fd], [], [], deadline)
        if not ready:
            raise RuntimeError(f"{what}: not ready after {START_TIMEOUT_S} s: {b''.join(seen)[-2000:]!r}")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuntimeError(f"{what} exited with {proc.wait()}: {(b''.join(seen) + buffer)[-2000:]!r}")
        buffer += chunk
        while b"\n" in buffer:
            line, _, buffer = buffer.partition(b"\n")
            seen.append(line + b"\n")
            if prefix.encode() in line:
                return line.decode(), seen, buffer


class Origin:
    """A local HTTPS origin (github_origin.py, google_origin.py) run from a conf."""

    def __init__(self, workdir, script, conf):
        self.record = os.path.join(workdir, f"{script}.records.jsonl")
        conf = dict(conf, record=self.record, lifetime=600)
        conf_path = write_file(os.path.join(workdir, f"{script}.json"), json.dumps(conf))
        self.err = open(os.path.join(workdir, f"{script}.err"), "w")
        self.proc = subprocess.Popen([PYTHON, os.path.join(HERE, script), conf_path], stdout=subprocess.PIPE,
                                     stderr=self.err, stdin=subprocess.DEVNULL)
        line, _, _ = read_line_until(self.proc.stdout, "listening ", self.proc, script)
        self.port = int(line.split()[1])

    def events(self, event=None, **match):
        try:
            with open(self.record) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []
        return [r for r in rows if (event is None or r["event"] == event)
                and all(r.get(k) == v for k, v in match.items())]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.err.close()


class Vaultgate:
    """`vaultgate serve` on port 0 with CONFIG (a YAML text holding the marks
    @LISTEN@ and @COMMON@, replaced by the listeners and the CA, store, admin
    and log sections)."""

    def __init__(self, binary, workdir, config):
        self.binary, self.workdir = binary, workdir
        self.admin_token = secrets.token_hex(24)
        write_file(self.path("admin.token"), self.admin_token, private=True)
        with open(self.path("master.key"), "wb") as f:
            f.write(secrets.token_bytes(32))
        os.chmod(self.path("master.key"), 0o600)
        if not os.path.exists(self.path("proxyca", "ca.pem")):
            subprocess.run([binary, "ca", "init", "--out", self.path("proxyca"), "--name", "vaultgate mint test"],
                           check=True, capture_output=True, timeout=30)
        self.ca = self.path("proxyca", "ca.pem")
        self.access_log = self.path("access.log")
        common = textwrap.dedent(f"""\
            ca:
              cert: {self.path("proxyca", "ca.pem")}
              key: {self.path("proxyca", "ca-key.pem")}
            store:
              path: {self.path("vaultgate.db")}
              master_key_file: {self.path("master.key")}
            admin:
              token_file: {self.path("admin.token")}
            log:
              access: {self.access_log}
              level: debug
        """)
        listen = "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n"
        self.config = write_file(self.path("vaultgate.yaml"), config.replace("@LISTEN@", listen)
                                 .replace("@COMMON@", common))
        self.stderr_chunks = []
        self.proc = subprocess.Popen([binary, "serve", "--config", self.config], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line, seen, rest = read_line_until(self.proc.stderr, "vaultgate listening: proxy ", self.proc, "vaultgate")
        self.stderr_chunks.extend(seen + [rest])
        words = line.split()
        self.proxy_port = int(words[words.index("proxy") + 1].rsplit(":", 1)[1])
        self.admin_port = int(words[words.index("admin") + 1].rsplit(":", 1)[1])
        # Drained for the whole run: a full pipe would stall the proxy.
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()

    def path(self, *parts):
        return os.path.join(self.workdir, *parts)

    def _drain(self):
        for chunk in iter(lambda: os.read(self.proc.stderr.fileno(), 65536), b""):
            self.stderr_chunks.append(chunk)

    def admin(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=10)
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        text = r.read().decode()
        conn.close()
        return r.status, (json.loads(text) if text.startswith(("{", "[")) else text)

    def session(self, vaults, policy="default"):
        """A session as the bootstrapper makes one: (proxy URL with id and token)."""
        status, body = self.admin("POST", "/v1/sessions", {"vault_ids": vaults, "egress_policy": policy})
        if status != 201:
            raise RuntimeError(f"POST /v1/sessions: {status} {body}")
        return body["proxy_url"]

    def stderr_text(self):
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def access_entries(self):
        try:
            with open(self.access_log) as f:
                return [json.loads(line) for line in f if line.strip().startswith("{")]
        except FileNotFoundError:
            return []

    def wait_for_entries(self, predicate, timeout=5.0):
        """The access-log entries PREDICATE accepts, once there is one: the
        line is written after the reply, so a client can be faster."""
        deadline = time.monotonic() + timeout
        while True:
            entries = [e for e in self.access_entries() if predicate(e)]
            if entries or time.monotonic() > deadline:
                return entries
            time.sleep(0.05)

    def logs(self):
        """Everything vaultgate wrote: its diagnostic log, its access log and its store."""
        text = self.stderr_text()
        for name in ("access.log", "vaultgate.db"):
            try:
                with open(self.path(name), "rb") as f:
                    text += f.read().decode("utf-8", "replace")
            except FileNotFoundError:
                pass
        return text

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.drain.join(timeout=5)


# ---- clients -------------------------------------------------------------

def proxied_request(proxy_url, host, port, path, cafile, method="GET", headers=None, body=None):
    """One request through the explicit proxy (CONNECT with the session's
    Proxy-Authorization, then TLS to HOST verified against CAFILE alone):
    (status, headers, body bytes)."""
    proxy = urlsplit(proxy_url)
    ctx = ssl.create_default_context(cafile=cafile)
    conn = http.client.HTTPSConnection(proxy.hostname, proxy.port, context=ctx, timeout=30)
    tunnel_headers = {}
    if proxy.username:
        pair = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
        tunnel_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    conn.set_tunnel(host, port, headers=tunnel_headers)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, data


def git_env(home, proxy_url, cafile):
    """git as a bootstrapped sandbox runs it: the session in HTTPS_PROXY, the
    bundle vaultgate's CA is in, proxy credentials sent at once; no
    credential of its own, and no prompt."""
    return {"PATH": "/usr/bin:/bin", "HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
            "HTTPS_PROXY": proxy_url, "https_proxy": proxy_url, "NO_PROXY": "localhost,127.0.0.1,::1",
            "GIT_SSL_CAINFO": cafile, "GIT_HTTP_PROXY_AUTHMETHOD": "basic", "LC_ALL": "C"}


def make_bare_repo(root, relpath, marker):
    """A bare repository at ROOT/RELPATH with one commit; returns its head commit."""
    work = tempfile.mkdtemp(dir=root, prefix="work-")
    env = {"PATH": "/usr/bin:/bin", "HOME": root, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "mint",
           "GIT_AUTHOR_EMAIL": "mint@example.invalid", "GIT_COMMITTER_NAME": "mint",
           "GIT_COMMITTER_EMAIL": "mint@example.invalid"}
    bare = os.path.join(root, relpath)

    def git(*args, cwd=None):
        return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True,
                              timeout=30).stdout.strip()

    git("init", "-q", "--bare", "--initial-branch=main", bare)
    git("init", "-q", "--initial-branch=main", work)
    write_file(os.path.join(work, "README"), f"{marker}\n")
    git("add", "README", cwd=work)
    git("commit", "-q", "-m", "private", cwd=work)
    git("push", "-q", bare, "main", cwd=work)
    shutil.rmtree(work)
    return git("--git-dir", bare, "rev-parse", "refs/heads/main")


def leaks(text, values):
    """The labels of VALUES ({label: value}) that occur in TEXT."""
    return sorted(label for label, value in values.items() if value and value in text)


class MintTestCase(unittest.TestCase):
    """A test class whose setUpClass starts `cls.origin` and `cls.vg`: both
    stopped at the end, the work directory removed (kept with
    VAULTGATE_KEEP_TEST_DIR), and vaultgate's last log lines shown when a case
    failed."""

    vaultgate_binary = ""
    failed = False

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result else 0
        outcome = super().run(result)
        if result and len(result.failures) + len(result.errors) > before:
            type(self).failed = True
        return outcome

    @classmethod
    def tearDownClass(cls):
        if cls.failed:
            tail = "\n".join(cls.vg.stderr_text().splitlines()[-40:])
            print(f"--- vaultgate stderr (last lines) ---\n{tail}", flush=True)
        cls.vg.stop()
        cls.origin.stop()
        if os.environ.get("VAULTGATE_KEEP_TEST_DIR"):
            print(f"kept {cls.workdir}")
        else:
            shutil.rmtree(cls.workdir, ignore_errors=True)
