"""Stand-in for a bound API origin (backend.composio.dev) in scripts/container-e2e.sh.

HTTPS on :443 with a certificate from the test's own CA. It never prints or
returns the x-api-key it receives, only its SHA-256, so that the test can tell
which key arrived without the key reaching any log:
  GET /key          -> "sha256=<hex of x-api-key>"
  GET /slow?s=N     -> prints "slow request started", waits N seconds, then as /key
  GET /echo         -> the x-api-key itself (vaultgate must redact it on the way back)
"""
import hashlib
import http.server
import ssl
import sys
import time
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        key = self.headers.get("x-api-key", "")
        if url.path == "/slow":
            print("slow request started", flush=True)
            time.sleep(float(urllib.parse.parse_qs(url.query).get("s", ["3"])[0]))
        if url.path == "/echo":
            body = key
        else:
            body = "sha256=" + hashlib.sha256(key.encode()).hexdigest()
        data = (body + "\n").encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):  # the request line only, never headers
        print("origin: " + fmt % args, flush=True)


def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 443), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("origin listening on :443", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
