"""The recording upstreams of the sandbox end-to-end test: TLS servers on 443
and 8443 and plain HTTP servers on 80, run inside the up namespace, that
record every TCP connection and every request with its headers."""

import json
import os
import signal
import ssl
import sys
import time
import urllib.parse


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


if __name__ == "__main__":
    upstream_main(sys.argv[1])
