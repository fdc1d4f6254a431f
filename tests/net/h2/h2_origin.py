#!/usr/bin/python3
"""An HTTP/2 origin for vaultgate's tests (python3-h2 over TLS, ALPN h2 only).

    h2_origin.py --site HOST=CERT,KEY [--site ...] --log FILE

(one certificate per host name, picked by SNI; the first is the default)

Listens on 127.0.0.1, port 0, and prints "listening PORT". Each request is
appended to --log as one JSON line: the connection's number, method, path,
authority, every field, the body and the trailers, as they arrived. The
answer never repeats a field value (the injected secret must reach no
client): it is a JSON object with the field names, the body and the trailers.

Paths and content types:
  application/grpc*   DATA echoes the request body; trailers grpc-status 0,
                      grpc-message "echoed"
  /trailers           the JSON answer, then trailers x-origin-trailer: done
                      and x-origin-fields: N
  /push               a PUSH_PROMISE before the answer (vaultgate disabled push)
  /big-head           a response head of 100 KiB
  /hold?n=N           held until N requests are in flight on the connection
  /pkg.Echo/Bidi      each DATA echoed at once (a bidirectional gRPC stream);
                      trailers grpc-status 0 after the request ends
  /reset              RST_STREAM (INTERNAL_ERROR) instead of an answer
  /truncate           a head and part of a body, then RST_STREAM
  /reflect            the x-api-key value it got, in a field, the body and a
                      trailer (for a service that redacts)
  anything else       the JSON answer
"""
import argparse
import json
import socket
import ssl
import struct
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.exceptions

LOG_LOCK = threading.Lock()
CONNECTIONS = [0]


class Origin:
    def __init__(self, sock, number, log_path):
        self.sock = sock
        self.number = number
        self.log_path = log_path
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8", validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=config)
        self.streams = {}   # id -> {"headers", "body", "trailers"}
        self.pending = {}   # id -> [bytes left to send, trailers or None]
        self.held = []      # (id, n) waiting for n requests in flight

    def run(self):
        self.conn.initiate_connection()
        self.flush()
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.flush()
                return
            for event in events:
                self.on_event(event)
            self.send_pending()
            self.flush()

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def on_event(self, event):
        if isinstance(event, h2.events.RequestReceived):
            self.streams[event.stream_id] = {"headers": list(event.headers), "body": b"", "trailers": []}
        elif isinstance(event, h2.events.DataReceived):
            stream = self.streams[event.stream_id]
            stream["body"] += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if dict(stream["headers"]).get(":path") == "/pkg.Echo/Bidi":
                if not stream.get("answered"):
                    stream["answered"] = True
                    self.conn.send_headers(event.stream_id, [(":status", "200"), ("content-type", "application/grpc")])
                self.conn.send_data(event.stream_id, event.data)
        elif isinstance(event, h2.events.TrailersReceived):
            self.streams[event.stream_id]["trailers"] = list(event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            self.on_request(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.pending.pop(event.stream_id, None)

    def on_request(self, sid):
        req = self.streams[sid]
        fields = dict(req["headers"])
        path = fields.get(":path", "")
        record = {"connection": self.number, "stream": sid, "method": fields.get(":method"), "path": path,
                  "authority": fields.get(":authority"), "headers": req["headers"],
                  "body": req["body"].decode(errors="replace"), "trailers": req["trailers"]}
        with LOG_LOCK, open(self.log_path, "a") as log:
            log.write(json.dumps(record) + "\n")
        if path.startswith("/hold"):
            self.held.append(sid)
            wanted = int(path.split("n=", 1)[1])
            if len(self.held) >= wanted:
                for held in self.held:
                    self.answer(held)
                self.held = []
            return
        self.answer(sid)

    def answer(self, sid):
        req = self.streams[sid]
        fields = dict(req["headers"])
        path = fields.get(":path", "")
        if path == "/pkg.Echo/Bidi":
            self.conn.send_headers(sid, [("grpc-status", "0"), ("grpc-message", "bidi")], end_stream=True)
            return
        if fields.get("content-type", "").startswith("application/grpc"):
            self.conn.send_headers(sid, [(":status", "200"), ("content-type", "application/grpc")])
            self.pending[sid] = [req["body"], [("grpc-status", "0"), ("grpc-message", "echoed")]]
            return
        if path == "/reset":
            self.conn.reset_stream(sid, error_code=2)
            return
        if path == "/truncate":
            self.conn.send_headers(sid, [(":status", "200"), ("content-type", "text/plain")])
            self.conn.send_data(sid, b"partial")
            self.conn.reset_stream(sid, error_code=2)
            return
        if path == "/reflect":
            key = fields.get("x-api-key", "")
            self.conn.send_headers(sid, [(":status", "200"), ("x-reflected", key)])
            self.pending[sid] = [("body:" + key).encode(), [("x-reflected-trailer", key)]]
            return
        if path == "/push":
            self.raw_push_promise(sid)
        if path == "/big-head":
            self.conn.send_headers(sid, [(":status", "200")] + [(f"x-big-{i}", "b" * 1000) for i in range(100)],
                                   end_stream=True)
            return
        body = json.dumps({"path": path, "names": [n for n, _ in req["headers"]],
                           "body": req["body"].decode(errors="replace"), "trailers": req["trailers"]}).encode()
        trailers = None
        if path.startswith("/trailers"):
            trailers = [("x-origin-trailer", "done"), ("x-origin-fields", str(len(req["headers"])))]
        self.conn.send_headers(sid, [(":status", "200"), ("content-type", "application/json"),
                                     ("x-origin", "h2")])
        self.pending[sid] = [body, trailers]

    def raw_push_promise(self, sid):
        # Written by hand: python3-h2 refuses to push to a peer that disabled it.
        from hpack import Encoder
        block = Encoder().encode([(":method", "GET"), (":scheme", "https"), (":authority", "x"),
                                  (":path", "/pushed")])
        payload = struct.pack(">I", 2) + block
        self.flush()
        self.sock.sendall(struct.pack(">I", len(payload))[1:] + bytes([0x5, 0x4]) + struct.pack(">I", sid) + payload)

    def send_pending(self):
        for sid in list(self.pending):
            body, trailers = self.pending[sid]
            while body:
                window = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
                if window <= 0:
                    break
                self.conn.send_data(sid, body[:window])
                body = body[window:]
            self.pending[sid][0] = body
            if body:
                continue
            if trailers:
                self.conn.send_headers(sid, trailers, end_stream=True)
            else:
                self.conn.end_stream(sid)
            del self.pending[sid]


def serve(sock, number, log_path):
    try:
        Origin(sock, number, log_path).run()
    finally:
        sock.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--site", action="append", required=True)
    p.add_argument("--log", required=True)
    args = p.parse_args()
    contexts = {}
    for site in args.site:
        host, _, files = site.partition("=")
        cert, _, key = files.partition(",")
        site_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        site_ctx.load_cert_chain(cert, key)
        site_ctx.set_alpn_protocols(["h2"])
        contexts[host] = site_ctx
    ctx = next(iter(contexts.values()))

    def pick(sock, name, _):
        if name in contexts:
            sock.context = contexts[name]
    ctx.sni_callback = pick
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("listening", listener.getsockname()[1], flush=True)
    while True:
        raw, _ = listener.accept()
        try:
            tls = ctx.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            continue
        CONNECTIONS[0] += 1
        threading.Thread(target=serve, args=(tls, CONNECTIONS[0], args.log), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
