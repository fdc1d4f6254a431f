#!/usr/bin/python3
"""A local "GitHub" for the github-app tests (python3-jwt, git http-backend).

* POST {prefix}/app/installations/{id}/access_tokens verifies the RS256 JWT
  against the app's public key (iss = app_id, iat not in the future, at most
  ten minutes to exp) and answers 201 {"token","expires_at"}, the expiry per
  installation from the conf. {prefix} is "" on the API hosts and "/api/v3" on
  the Enterprise hosts, as GitHub serves them.
* GET {prefix}/repos/{owner}/{repo} wants `Authorization: Bearer TOKEN`.
* /{owner}/{repo}.git/... is smart HTTP through `git http-backend` (CGI),
  served only with `Authorization: Basic base64(x-access-token:TOKEN)`.
A TOKEN is one this origin issued and that has not expired; anything else is
401, and every answer is recorded (tls_origin.Recorder). Error bodies carry
the conf's canary, which must never reach a client through vaultgate.

Usage: github_origin.py CONF.json (see GithubFixture in github_app_test.py).
"""

import base64
import datetime
import os
import re
import secrets
import subprocess
import threading
import time

import jwt

import tls_origin

TOKENS_PATH = re.compile(r"^(/api/v3)?/app/installations/(\d+)/access_tokens$")
REPO_API_PATH = re.compile(r"^(/api/v3)?/repos/([^/]+)/([^/]+)$")
GIT_PATH = re.compile(r"^/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\.git/(info/refs|git-upload-pack)$")

tokens = {}  # token -> (installation, expiry as a Unix time)
tokens_lock = threading.Lock()


def api_prefix_fits(handler, prefix):
    conf = handler.server.conf
    return handler.host() in (conf["enterprise_hosts"] if prefix else conf["api_hosts"])


def refuse(handler, status, event, why, **fields):
    handler.server.recorder.write(event=event, ok=False, why=why, **fields)
    body = {"message": "Bad credentials", "documentation_url": handler.server.conf["body_canary"]}
    handler.reply(status, body, headers=[("WWW-Authenticate", 'Basic realm="GitHub"')] if event == "git" else [])


def live_token(token):
    with tokens_lock:
        entry = tokens.get(token)
    return entry is not None and entry[1] > time.time()


def authorizations(handler):
    return handler.headers.get_all("Authorization") or []


def access_tokens(handler, path):
    conf = handler.server.conf
    prefix, installation = TOKENS_PATH.match(path).groups()
    fields = {"installation": installation, "host": handler.host(), "prefix": prefix or "",
              "accept": handler.headers.get("Accept"), "api_version": handler.headers.get("X-GitHub-Api-Version")}
    handler.read_body()
    auth = authorizations(handler)
    if len(auth) != 1 or not auth[0].startswith("Bearer "):
        return refuse(handler, 401, "access_tokens", "no single Bearer JWT", **fields)
    try:
        claims = jwt.decode(auth[0][len("Bearer "):], conf["app_public_key"], algorithms=["RS256"],
                            options={"require": ["iat", "exp", "iss"]})
    except jwt.InvalidTokenError as e:
        return refuse(handler, 401, "access_tokens", f"JWT rejected: {type(e).__name__}", **fields)
    now = time.time()
    if str(claims["iss"]) != conf["app_id"]:
        return refuse(handler, 401, "access_tokens", f"iss {claims['iss']!r}", **fields)
    if claims["iat"] > now + 1 or claims["exp"] - claims["iat"] > 600:
        return refuse(handler, 401, "access_tokens", f"iat/exp window {claims['iat']}..{claims['exp']}", **fields)
    if installation not in conf["installations"]:
        return refuse(handler, 404, "access_tokens", "unknown installation", **fields)
    token = "ghs_" + secrets.token_hex(18)
    expiry = int(now) + conf["installations"][installation]["expires_in"]
    with tokens_lock:
        tokens[token] = (installation, expiry)
    expires_at = datetime.datetime.fromtimestamp(expiry, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    handler.server.recorder.write(event="access_tokens", ok=True, token=token, expires_at=expires_at,
                                  iat=claims["iat"], exp=claims["exp"], **fields)
    handler.reply(201, {"token": token, "expires_at": expires_at, "permissions": {"contents": "read"},
                        "repository_selection": "all"})


def repo_api(handler, path):
    _, owner, repo = REPO_API_PATH.match(path).groups()
    fields = {"host": handler.host(), "path": path}
    auth = authorizations(handler)
    if len(auth) != 1 or not auth[0].startswith("Bearer ") or not live_token(auth[0][len("Bearer "):]):
        return refuse(handler, 401, "api", f"{len(auth)} Authorization fields, not one live Bearer token", **fields)
    handler.server.recorder.write(event="api", ok=True, token=auth[0][len("Bearer "):], **fields)
    handler.reply(200, {"full_name": f"{owner}/{repo}", "private": True})


def basic_token(value):
    if not value.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(value[len("Basic "):], validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return password if user == "x-access-token" else None


def git_backend(handler, path):
    conf = handler.server.conf
    body = handler.read_body()
    fields = {"host": handler.host(), "path": path, "method": handler.command}
    auth = authorizations(handler)
    token = basic_token(auth[0]) if len(auth) == 1 else None
    if token is None or not live_token(token):
        return refuse(handler, 401, "git", f"{len(auth)} Authorization fields, not one live x-access-token", **fields)
    handler.server.recorder.write(event="git", ok=True, token=token, **fields)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": conf["git_root"], "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_PROJECT_ROOT": conf["git_root"], "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
           "REQUEST_METHOD": handler.command, "QUERY_STRING": handler.path.partition("?")[2],
           "CONTENT_TYPE": handler.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
           "REMOTE_ADDR": handler.client_address[0], "REMOTE_USER": "x-access-token"}
    if handler.headers.get("Content-Encoding"):
        env["HTTP_CONTENT_ENCODING"] = handler.headers["Content-Encoding"]
    if handler.headers.get("Git-Protocol"):
        env["GIT_PROTOCOL"] = handler.headers["Git-Protocol"]
    out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60).stdout
    head, _, payload = out.partition(b"\r\n\r\n")
    status, ctype, extra = 200, "application/octet-stream", []
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        name, value = name.strip().lower(), value.strip()
        if name == "status":
            status = int(value.split()[0])
        elif name == "content-type":
            ctype = value
        elif name:
            extra.append((name, value))
    handler.reply(status, payload, ctype, extra)


class GithubHandler(tls_origin.OriginHandler):
    routes = [
        ("POST", lambda h, p: TOKENS_PATH.match(p) and api_prefix_fits(h, TOKENS_PATH.match(p).group(1)),
         access_tokens),
        ("GET", lambda h, p: REPO_API_PATH.match(p) and api_prefix_fits(h, REPO_API_PATH.match(p).group(1)),
         repo_api),
        ("GET", lambda h, p: GIT_PATH.match(p) and h.host() in h.server.conf["git_hosts"], git_backend),
        ("POST", lambda h, p: GIT_PATH.match(p) and h.host() in h.server.conf["git_hosts"], git_backend),
    ]


if __name__ == "__main__":
    tls_origin.main(GithubHandler)
