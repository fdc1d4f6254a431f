#!/usr/bin/python3
"""A local Google for the jwt-bearer tests (python3-jwt).

* POST on a token path of a token host is an RFC 7523 token endpoint: the form
  holds exactly grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer and an
  assertion, an RS256 JWT under the service account's key (kid = its
  private_key_id) with iss = client_email, aud = the URL it was posted to,
  scope = the conf's scopes joined by spaces, and one hour from iat to exp. The
  answer is 200 {"access_token","expires_in","token_type"}.
* Any GET on an API host wants `Authorization: Bearer TOKEN` with a token
  issued here.
Everything else is 401 with the conf's canary in the body; every answer is
recorded (tls_origin.Recorder).

Usage: google_origin.py CONF.json (see jwt_bearer_test.py).
"""

import secrets
import threading
import time
import urllib.parse

import jwt

import tls_origin

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
LIFETIME_S = 3599

tokens = set()
tokens_lock = threading.Lock()


def refuse(handler, event, why, **fields):
    handler.server.recorder.write(event=event, ok=False, why=why, **fields)
    handler.reply(401 if event == "api" else 400,
                  {"error": "invalid_grant", "error_description": handler.server.conf["body_canary"]})


def token_endpoint(handler, path):
    conf = handler.server.conf
    audience = f"https://{handler.headers.get('Host')}{path}"
    fields = {"path": path, "content_type": handler.headers.get("Content-Type")}
    form = urllib.parse.parse_qs(handler.read_body().decode(), keep_blank_values=True, strict_parsing=True)
    fields["form_keys"] = sorted(form)
    if sorted(form) != ["assertion", "grant_type"] or any(len(v) != 1 for v in form.values()):
        return refuse(handler, "token", "the form is not grant_type and assertion, once each", **fields)
    if form["grant_type"][0] != GRANT:
        return refuse(handler, "token", f"grant_type {form['grant_type'][0]!r}", **fields)
    assertion = form["assertion"][0]
    try:
        header = jwt.get_unverified_header(assertion)
        claims = jwt.decode(assertion, conf["sa_public_key"], algorithms=["RS256"], audience=audience,
                            issuer=conf["client_email"], options={"require": ["iat", "exp", "iss", "aud"]})
    except jwt.InvalidTokenError as e:
        return refuse(handler, "token", f"assertion rejected: {type(e).__name__}", **fields)
    fields.update(scope=claims.get("scope"), aud=claims["aud"], kid=header.get("kid"),
                  lifetime=claims["exp"] - claims["iat"])
    if header.get("kid") != conf["key_id"]:
        return refuse(handler, "token", "kid is not the key's private_key_id", **fields)
    if claims.get("scope") != " ".join(conf["scopes"][path]):
        return refuse(handler, "token", "scope is not the configured scopes", **fields)
    if claims["exp"] - claims["iat"] != 3600 or claims["iat"] > time.time() + 1:
        return refuse(handler, "token", "not one hour from iat", **fields)
    token = "ya29." + secrets.token_urlsafe(32)
    with tokens_lock:
        tokens.add(token)
    handler.server.recorder.write(event="token", ok=True, token=token, **fields)
    handler.reply(200, {"access_token": token, "expires_in": LIFETIME_S, "token_type": "Bearer"})


def api(handler, path):
    auth = handler.headers.get_all("Authorization") or []
    fields = {"path": path, "authorizations": len(auth)}
    token = auth[0][len("Bearer "):] if len(auth) == 1 and auth[0].startswith("Bearer ") else None
    with tokens_lock:
        known = token in tokens
    if not known:
        return refuse(handler, "api", "not one Bearer token issued here", **fields)
    handler.server.recorder.write(event="api", ok=True, token=token, **fields)
    handler.reply(200, {"ok": True, "path": path})


class GoogleHandler(tls_origin.OriginHandler):
    routes = [
        ("POST", lambda h, p: h.host() in h.server.conf["token_hosts"] and p in h.server.conf["scopes"],
         token_endpoint),
        ("GET", lambda h, p: h.host() in h.server.conf["api_hosts"], api),
    ]


if __name__ == "__main__":
    tls_origin.main(GoogleHandler)
