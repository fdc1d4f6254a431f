#!/usr/bin/python3
"""An AWS-like origin for vaultgate's aws-sigv4 tests: a TLS server (one
certificate per host name, picked by SNI) that re-verifies every request's
SigV4 signature with botocore under the real secret key, recomputing it from
what it received, as AWS would. It answers 200 when the signature holds and
403 when it does not; either way the body is a JSON verdict with what it saw,
and the verdict is also appended, one JSON line each, to --log.

    sigv4_origin.py --port P --log FILE --cert HOST=CERT,KEY ...
    (the secret key in SIGV4_ORIGIN_SECRET, the access key id in
    SIGV4_ORIGIN_ACCESS_KEY)
"""
import argparse
import hashlib
import http.server
import json
import os
import re
import ssl
import sys
import threading
import urllib.parse

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<akid>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<sig>[0-9a-f]{64})$"
)

SECRET = os.environ["SIGV4_ORIGIN_SECRET"]
ACCESS_KEY = os.environ["SIGV4_ORIGIN_ACCESS_KEY"]
LOG_LOCK = threading.Lock()


def decoded_params(query):
    """The query as AWS reads it: each name and value percent-decoded ('+'
    is a plus sign); botocore encodes them again and sorts them."""
    pairs = []
    for part in query.split("&") if query else []:
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((urllib.parse.unquote(name), urllib.parse.unquote(value)))
    return pairs


def verify(method, target, headers, body):
    """The verdict for one request: 'ok' or why not, and what was signed."""
    seen = {"method": method, "target": target, "headers": headers,
            "body_sha256": hashlib.sha256(body).hexdigest(), "body_length": len(body)}
    auth = [v for n, v in headers if n.lower() == "authorization"]
    if len(auth) != 1:
        return dict(seen, verdict=f"{len(auth)} Authorization headers")
    m = AUTH_RE.match(auth[0])
    if not m:
        return dict(seen, verdict="Authorization is not a SigV4 header")
    seen.update(access_key=m["akid"], region=m["region"], service=m["service"],
                signed_headers=m["signed"].split(";"))
    if m["akid"] != ACCESS_KEY:
        return dict(seen, verdict="unknown access key id")
    dates = [v for n, v in headers if n.lower() == "x-amz-date"]
    if len(dates) != 1 or dates[0][:8] != m["date"]:
        return dict(seen, verdict="X-Amz-Date missing, repeated or not the scope's date")
    content_sha = [v for n, v in headers if n.lower() == "x-amz-content-sha256"]
    if content_sha and re.fullmatch(r"[0-9a-f]{64}", content_sha[0]) and \
            content_sha[0] != seen["body_sha256"]:
        return dict(seen, verdict="X-Amz-Content-Sha256 does not match the body")

    # Only what the client said it signed goes into the recomputation, as AWS does.
    signed = set(seen["signed_headers"])
    path, _, query = target.partition("?")
    request = AWSRequest(method=method, url="https://" + dict(
        (n.lower(), v) for n, v in headers)["host"] + path, data=body, params=decoded_params(query))
    request.headers = HTTPHeaders()
    for name, value in headers:
        if name.lower() in signed:
            request.headers[name] = value
    request.context["timestamp"] = dates[0]
    cls = S3SigV4Auth if m["service"] == "s3" else SigV4Auth
    signer = cls(Credentials(ACCESS_KEY, SECRET), m["service"], m["region"])
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    seen["canonical_request"] = canonical
    if signer.signed_headers(signer.headers_to_sign(request)) != m["signed"]:
        return dict(seen, verdict="SignedHeaders names headers the request lacks")
    return dict(seen, verdict="ok" if expected == m["sig"] else "signature mismatch")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def handle_any(self):
        body = self.read_body()
        verdict = verify(self.command, self.path, list(self.headers.items()), body)
        out = json.dumps(verdict).encode()
        if "botocore" in self.headers.get("User-Agent", "").lower():
            out = b""  # an SDK parses the body as the service's answer; the verdict is in --log
        with LOG_LOCK, open(self.server.log_path, "a") as log:
            log.write(json.dumps(verdict) + "\n")
        self.send_response(200 if verdict["verdict"] == "ok" else 403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--cert", action="append", required=True)
    args = parser.parse_args()

    contexts = {}
    for spec in args.cert:
        host, _, files = spec.partition("=")
        cert, _, key = files.partition(",")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        contexts[host] = ctx
    default = next(iter(contexts.values()))

    def pick(sock, name, _ctx):
        if name in contexts:
            sock.context = contexts[name]

    default.sni_callback = pick
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.log_path = args.log
    server.socket = default.wrap_socket(server.socket, server_side=True)
    print("listening", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
