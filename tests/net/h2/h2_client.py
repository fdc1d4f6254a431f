#!/usr/bin/python3
"""HTTP/2 clients for vaultgate's tests: through the proxy (CONNECT, then TLS
with ALPN h2 against the vaultgate CA) to an intercepted host.

  h2_client.py --proxy PORT --ca CA --authority HOST:PORT MODE [ARGS]

Modes (each prints one JSON object):
  httpx                 GET /echo and POST /upload with python3-httpx, http2=True
  request PATH [N:V..]  one request with the fields given (the client's own
                        checks off, so malformed ones go out as they are);
                        --trailer N=V sends request trailers after the body,
                        --grpc-body TEXT a gRPC-framed message as the body
  concurrent N PATH     N requests at once on one connection
  bidi PATH             a gRPC stream: one message, its echo awaited before the
                        second message ends the request
  h1 PATH [N:V..]       one HTTP/1.1 GET (ALPN http/1.1): the raw response text
  settings              the SETTINGS vaultgate sends first
  hpack-bomb            a request whose fields decode to far more than 64 KiB
  table-size            a header block that raises the HPACK table past SETTINGS
  flood KIND            SETTINGS, PING, PRIORITY, empty DATA, rapid-reset or
                        CONTINUATION frames; then a request on a second
                        connection opened before the flood
"""
import argparse
import json
import socket
import ssl
import struct
import sys

import h2.config
import h2.connection
import h2.events
import h2.settings

ENHANCE_YOUR_CALM = 11


def open_tls(args):
    sock = socket.create_connection(("127.0.0.1", args.proxy), timeout=10)
    sock.sendall(f"CONNECT {args.authority} HTTP/1.1\r\nHost: {args.authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("proxy closed during CONNECT")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT refused: " + head.decode(errors="replace"))
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.set_alpn_protocols(["h2"])
    tls = ctx.wrap_socket(sock, server_hostname=args.authority.rsplit(":", 1)[0])
    if tls.selected_alpn_protocol() != "h2":
        raise SystemExit("ALPN chose " + str(tls.selected_alpn_protocol()))
    return tls


def new_connection(args):
    tls = open_tls(args)
    config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                       validate_outbound_headers=False, normalize_outbound_headers=False,
                                       validate_inbound_headers=False)
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    tls.sendall(conn.data_to_send())
    return tls, conn


def base_fields(args, path, method="GET"):
    return [(":method", method), (":scheme", "https"), (":authority", args.authority), (":path", path)]


def recv_or_nothing(tls):
    """The next bytes, or b"" once the peer closed, failed or went quiet."""
    try:
        return tls.recv(65536)
    except (socket.timeout, ssl.SSLError, OSError):
        return b""


def exchange(tls, conn, stream_id, timeout=10):
    """Reads until the stream ends, is reset, or the connection goes."""
    out = {"status": None, "body": "", "reset": None, "goaway": None, "headers": {}, "trailers": {}}
    tls.settimeout(timeout)
    while True:
        data = recv_or_nothing(tls)
        if not data:
            out["closed"] = True
            return out
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
                hdrs = dict(event.headers)
                out["status"] = int(hdrs[":status"])
                out["headers"] = {k: v for k, v in hdrs.items() if not k.startswith(":")}
            elif isinstance(event, h2.events.TrailersReceived) and event.stream_id == stream_id:
                out["trailers"] = dict(event.headers)
            elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
                out["body"] += event.data.decode(errors="replace")
                conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream_id:
                out["reset"] = int(event.error_code)
                return out
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                return out
            elif isinstance(event, h2.events.ConnectionTerminated):
                out["goaway"] = int(event.error_code)
                return out
        pending = conn.data_to_send()
        if pending:
            tls.sendall(pending)


def one_request(args, fields, body=None, conn_pair=None, trailers=None):
    tls, conn = conn_pair or new_connection(args)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, fields, end_stream=body is None and not trailers)
    if body is not None:
        conn.send_data(sid, body, end_stream=not trailers)
    if trailers:
        conn.send_headers(sid, trailers, end_stream=True)
    tls.sendall(conn.data_to_send())
    return exchange(tls, conn, sid)


def mode_request(args):
    # NAME=VALUE appends a field; ":NAME=VALUE" replaces that pseudo-field,
    # "+:NAME=VALUE" adds another, "~:NAME" drops it. \r \n \0 \x01 are escapes.
    fields = base_fields(args, args.rest[0])
    for item in args.rest[1:]:
        name, _, value = item.partition("=")
        value = value.replace("\\r", "\r").replace("\\n", "\n").replace("\\0", "\0").replace("\\x01", "\x01")
        if name.startswith("~"):
            fields = [f for f in fields if f[0] != name[1:]]
        elif name.startswith("+"):
            fields.insert(1, (name[1:], value))
        elif name.startswith(":"):
            fields = [(n, value if n == name else v) for n, v in fields]
        else:
            fields.append((name, value))
    body = args.body.encode() if args.body is not None else None
    if args.grpc_body is not None:
        message = args.grpc_body.encode()
        body = b"\0" + struct.pack(">I", len(message)) + message
    trailers = [tuple(t.split("=", 1)) for t in args.trailer] or None
    pair = new_connection(args)
    out = one_request(args, fields, body, conn_pair=pair, trailers=trailers)
    if args.then and not out.get("closed") and out.get("goaway") is None:
        out["then"] = one_request(args, base_fields(args, args.then), conn_pair=pair)
    return out


def mode_concurrent(args):
    """N streams opened at once on one connection; each one's status and body."""
    count, path = int(args.rest[0]), args.rest[1]
    tls, conn = new_connection(args)
    ids = []
    for _ in range(count):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, base_fields(args, path), end_stream=True)
        ids.append(sid)
    tls.sendall(conn.data_to_send())
    results = {sid: {"status": None, "body": "", "reset": None} for sid in ids}
    open_ids = set(ids)
    tls.settimeout(10)
    while open_ids:
        data = recv_or_nothing(tls)
        if not data:
            break
        for event in conn.receive_data(data):
            sid = getattr(event, "stream_id", None)
            if sid not in results:
                continue
            if isinstance(event, h2.events.ResponseReceived):
                results[sid]["status"] = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.DataReceived):
                results[sid]["body"] += event.data.decode(errors="replace")
                conn.acknowledge_received_data(event.flow_controlled_length, sid)
            elif isinstance(event, h2.events.StreamReset):
                results[sid]["reset"] = int(event.error_code)
                open_ids.discard(sid)
            elif isinstance(event, h2.events.StreamEnded):
                open_ids.discard(sid)
        pending = conn.data_to_send()
        if pending:
            tls.sendall(pending)
    return {"responses": [results[sid] for sid in ids]}


def mode_bidi(args):
    tls, conn = new_connection(args)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, base_fields(args, args.rest[0], "POST") +
                      [("content-type", "application/grpc"), ("te", "trailers")])
    frame_of = lambda text: b"\0" + struct.pack(">I", len(text)) + text
    conn.send_data(sid, frame_of(b"one"))
    tls.sendall(conn.data_to_send())
    out = {"status": None, "echoes": [], "trailers": {}}
    tls.settimeout(10)
    sent_second = False
    while True:
        data = recv_or_nothing(tls)
        if not data:
            out["closed"] = True
            return out
        for event in conn.receive_data(data):
            if getattr(event, "stream_id", None) != sid:
                continue
            if isinstance(event, h2.events.ResponseReceived):
                out["status"] = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.DataReceived):
                out["echoes"].append(event.data[5:].decode(errors="replace"))
                conn.acknowledge_received_data(event.flow_controlled_length, sid)
                if not sent_second:  # the first echo came while the request was still open
                    sent_second = True
                    conn.send_data(sid, frame_of(b"two"), end_stream=True)
            elif isinstance(event, h2.events.TrailersReceived):
                out["trailers"] = dict(event.headers)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                return out
        pending = conn.data_to_send()
        if pending:
            tls.sendall(pending)


def mode_h1(args):
    """HTTP/1.1 through the same CONNECT: the raw response, read to its end."""
    sock = socket.create_connection(("127.0.0.1", args.proxy), timeout=10)
    sock.sendall(f"CONNECT {args.authority} HTTP/1.1\r\nHost: {args.authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.set_alpn_protocols(["http/1.1"])
    tls = ctx.wrap_socket(sock, server_hostname=args.authority.rsplit(":", 1)[0])
    lines = [f"GET {args.rest[0]} HTTP/1.1", f"Host: {args.authority}", "Connection: close"]
    lines += [item.replace("=", ": ", 1) for item in args.rest[1:]]
    tls.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    raw = b""
    while True:
        data = recv_or_nothing(tls)
        if not data:
            break
        raw += data
    return {"raw": raw.decode(errors="replace")}


def mode_settings(args):
    """The SETTINGS frame vaultgate sends after the preface, by identifier."""
    tls = open_tls(args)
    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(0x4, 0, 0))
    buf = b""
    tls.settimeout(10)
    while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
        data = recv_or_nothing(tls)
        if not data:
            break
        buf += data
    payload = buf[9:9 + int.from_bytes(buf[:3], "big")]
    settings = {}
    for i in range(0, len(payload), 6):
        ident, value = struct.unpack(">HI", payload[i:i + 6])
        settings[str(ident)] = value
    return {"type": buf[3] if len(buf) > 3 else None, "settings": settings}


def mode_unread_body(args):
    """A gRPC POST that vaultgate refuses at once, then a body (2 MiB, or the
    size given) sent as the windows allow (more than the connection's window),
    then a GET on the same connection. `stalled` when the windows did not
    reopen in 10 s."""
    import time
    tls, conn = new_connection(args)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, base_fields(args, "/pkg.Service/Method", "POST") +
                      [("content-type", "application/grpc"), ("te", "trailers")])
    tls.sendall(conn.data_to_send())
    out = {"status": None, "stalled": False}
    left = int(args.rest[0]) if args.rest else 2 * 1024 * 1024
    deadline = time.monotonic() + 10
    while left > 0 and not out.get("reset"):
        window = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, left)
        # Wait for a WINDOW_UPDATE only when there is no window left to send in.
        tls.settimeout(0.2 if window == 0 else 0.0)
        if window > 0:
            conn.send_data(sid, b"x" * window)
            left -= window
            deadline = time.monotonic() + 10
        elif time.monotonic() > deadline:
            out["stalled"] = True
            break
        tls.sendall(conn.data_to_send())
        for event in conn.receive_data(recv_or_nothing(tls) or b""):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == sid:
                out["status"] = int(dict(event.headers)[":status"])
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == sid:
                out["reset"] = int(event.error_code)
        pending = conn.data_to_send()
        if pending:
            tls.sendall(pending)
    out["then"] = one_request(args, base_fields(args, "/echo"), conn_pair=(tls, conn))
    return out


def mode_httpx(args):
    import httpx
    proxy = f"http://127.0.0.1:{args.proxy}"
    with httpx.Client(http2=True, proxies=proxy, verify=args.ca, timeout=10) as client:
        base = f"https://{args.authority}"
        get = client.get(base + "/echo")
        post = client.post(base + "/upload", content=b"y" * 100000)
        return {"get": {"status": get.status_code, "version": get.http_version, "body": get.text},
                "post": {"status": post.status_code, "version": post.http_version, "body": post.text}}


def mode_hpack_bomb(args):
    # One 4000-byte field enters the dynamic table; 100 one-byte references to
    # it decode to 400 KB.
    from hpack import Encoder
    enc = Encoder()
    block = enc.encode(base_fields(args, "/echo") + [("x-bomb", "b" * 4000)])
    block += bytes([0x80 | 62]) * 100  # indexed: the newest dynamic entry
    tls, conn = new_connection(args)
    return raw_headers_then_read(tls, conn, 1, block)


def mode_table_size(args):
    # A dynamic table size update (001xxxxx) to 1 MiB, past the 4096 vaultgate allows.
    update = bytes([0x3F]) + encode_int_rest((1 << 20) - 31)
    from hpack import Encoder
    block = update + Encoder().encode(base_fields(args, "/echo"))
    tls, conn = new_connection(args)
    return raw_headers_then_read(tls, conn, 1, block)


def encode_int_rest(value):
    out = bytearray()
    while value >= 128:
        out.append((value % 128) + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def frame(ftype, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream_id) + payload


def raw_headers_then_read(tls, conn, sid, block):
    tls.sendall(frame(0x1, 0x4 | 0x1, sid, block))  # HEADERS, END_HEADERS | END_STREAM
    return read_raw(tls, sid)


def read_raw(tls, sid, timeout=10):
    """Frames by hand: status (a HEADERS on sid), RST_STREAM or GOAWAY codes."""
    from hpack import Decoder
    dec = Decoder()
    out = {"status": None, "reset": None, "goaway": None}
    buf = b""
    tls.settimeout(timeout)
    while True:
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            ftype, flags = buf[3], buf[4]
            stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            payload = buf[9:9 + length]
            buf = buf[9 + length:]
            if ftype == 0x7:
                out["goaway"] = int.from_bytes(payload[4:8], "big")
                return out
            if ftype == 0x3 and stream == sid:
                out["reset"] = int.from_bytes(payload[:4], "big")
                return out
            if ftype == 0x1 and stream == sid:
                out["status"] = int(dict(dec.decode(payload))[":status"])
                if out["status"] >= 200:
                    return out
            elif ftype == 0x1:
                dec.decode(payload)
            if ftype == 0x4 and not flags & 1:
                tls.sendall(frame(0x4, 0x1, 0))
        data = recv_or_nothing(tls)
        if not data:
            out["closed"] = True
            return out
        buf += data


def flood_bytes(kind, args, conn):
    from hpack import Encoder
    enc = Encoder()
    if kind == "settings":
        return frame(0x4, 0, 0) * 2000
    if kind == "ping":
        return frame(0x6, 0, 0, b"12345678") * 2000
    if kind == "priority":
        return b"".join(frame(0x2, 0, 2 * i + 1, struct.pack(">IB", 0, 15)) for i in range(2000))
    if kind == "empty-data":
        head = frame(0x1, 0x4, 1, enc.encode(base_fields(args, "/upload", "POST")))
        return head + frame(0x0, 0, 1) * 2000
    if kind == "rapid-reset":
        out = bytearray()
        for i in range(1000):
            sid = 2 * i + 1
            out += frame(0x1, 0x4, sid, enc.encode(base_fields(args, "/echo")))
            out += frame(0x3, 0, sid, struct.pack(">I", 8))  # RST_STREAM CANCEL
        return bytes(out)
    if kind == "continuation":
        out = bytearray(frame(0x1, 0, 1, enc.encode(base_fields(args, "/echo"))))
        for i in range(2000):
            out += frame(0x9, 0, 1, enc.encode([(f"x-c{i}", "v")]))
        return bytes(out)
    raise SystemExit("unknown flood " + kind)


def mode_flood(args):
    kind = args.rest[0]
    bystander = new_connection(args)
    tls, conn = new_connection(args)
    conn.clear_outbound_data_buffer()
    try:
        tls.sendall(flood_bytes(kind, args, conn))
    except OSError:
        pass
    result = read_raw(tls, 0)
    other = one_request(args, base_fields(args, "/echo"), conn_pair=bystander)
    return {"goaway": result["goaway"], "closed": result.get("closed", False), "other_status": other["status"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--proxy", type=int, required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--authority", required=True)
    p.add_argument("--body")
    p.add_argument("--then", help="a second request (a path) on the same connection")
    p.add_argument("--trailer", action="append", default=[], help="NAME=VALUE, a request trailer")
    p.add_argument("--grpc-body", help="a gRPC message (length-prefixed) as the body")
    p.add_argument("mode")
    p.add_argument("rest", nargs="*")
    args = p.parse_args()
    modes = {"httpx": mode_httpx, "request": mode_request, "hpack-bomb": mode_hpack_bomb,
             "table-size": mode_table_size, "flood": mode_flood, "unread-body": mode_unread_body,
             "concurrent": mode_concurrent, "h1": mode_h1, "settings": mode_settings, "bidi": mode_bidi}
    print(json.dumps(modes[args.mode](args)))


if __name__ == "__main__":
    sys.exit(main())
