"""The base of the local HTTPS origins of the minted-credential tests: a
threaded TLS server on 127.0.0.1 port 0 that answers for every name in its
certificate, writes each event to a JSON-lines record file before it answers
(so a test reads what happened as soon as its client returns), and prints
`listening PORT` on stdout once it accepts connections."""

import json
import os
import signal
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Recorder:
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def write(self, **event):
        event["t"] = time.time()
        line = json.dumps(event) + "\n"
        with self.lock, open(self.path, "a") as out:
            out.write(line)


class OriginHandler(BaseHTTPRequestHandler):
    """Subclasses set `routes`: a list of (method, predicate(path), function(handler, path))."""

    protocol_version = "HTTP/1.1"
    server_version = "mint-test-origin"
    routes = []

    def log_message(self, *args):
        pass

    def host(self):
        return (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = self.headers.get("Content-Length", "0")
        return self.rfile.read(int(length)) if length.isdigit() else b""

    def reply(self, status, body, ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        path = self.path.split("?", 1)[0]
        for method, matches, route in self.routes:
            if method == self.command and matches(self, path):
                return route(self, path)
        self.server.recorder.write(event="unrouted", host=self.host(), method=self.command, path=self.path)
        self.reply(404, {"message": "Not Found"})

    do_GET = do_POST = do_HEAD = dispatch


class TLSOrigin(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler, conf):
        super().__init__(("127.0.0.1", 0), handler)
        self.conf = conf
        self.recorder = Recorder(conf["record"])
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(conf["cert"], conf["key"])

    def get_request(self):
        sock, addr = super().get_request()
        sock.settimeout(30)
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError) as e:
            self.recorder.write(event="tls_failed", error=str(e))
            return
        super().finish_request(request, client_address)


def serve(handler, conf_path):
    """Runs the origin until SIGTERM, or until the conf's lifetime (a bound
    even when the test that started it dies)."""
    with open(conf_path) as f:
        conf = json.load(f)
    server = TLSOrigin(handler, conf)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(f"listening {server.server_address[1]}", flush=True)
    time.sleep(conf.get("lifetime", 300))
    os._exit(0)


def main(handler):
    serve(handler, sys.argv[1])
