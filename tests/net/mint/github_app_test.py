#!/usr/bin/python3
"""github-app end to end: the real git client clones a private repository
through vaultgate, which buys installation tokens with an RS256 JWT.

One local HTTPS origin (github_origin.py) answers for github.test (git),
api.github.test (the API and its access_tokens endpoint) and ghe.test (an
Enterprise server: git at /, the API under /api/v3); upstream.resolve pins
the names to 127.0.0.1 and upstream.ca_file trusts the origin's test CA. git
runs as a bootstrapped sandbox would (an admin API session in HTTPS_PROXY,
GIT_SSL_CAINFO, only a placeholder credential in the URL).

Usage: github_app_test.py --vaultgate PATH [unittest options]
"""

import json
import os
import secrets
import subprocess
import tempfile
import textwrap
import unittest

import mint_fixture as mf

APP_ID = "123456"
GIT_INSTALLATION, API_INSTALLATION, SOON_INSTALLATION, GHE_INSTALLATION = "7890", "7891", "7892", "7893"
HOSTS = ["github.test", "api.github.test", "ghe.test"]


class GithubAppTest(mf.MintTestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="vg-github-app-")
        cls.app_key, app_public = mf.rsa_key()
        cls.wrong_key, _ = mf.rsa_key()
        cls.canary = "origin-body-canary-" + secrets.token_hex(8)
        ca, cert, key = mf.make_pki(cls.workdir, HOSTS)
        cls.origin_ca = ca
        git_root = os.path.join(cls.workdir, "git")
        os.mkdir(git_root)
        cls.marker = "private content " + secrets.token_hex(6)
        cls.head = mf.make_bare_repo(git_root, "org/private.git", cls.marker)
        cls.origin = mf.Origin(cls.workdir, "github_origin.py", {
            "cert": cert, "key": key, "app_id": APP_ID, "app_public_key": app_public, "git_root": git_root,
            "body_canary": cls.canary, "api_hosts": ["api.github.test"], "enterprise_hosts": ["ghe.test"],
            "git_hosts": ["github.test", "ghe.test"],
            # 240 s: inside the five minutes vaultgate keeps as a margin.
            "installations": {GIT_INSTALLATION: {"expires_in": 3600}, API_INSTALLATION: {"expires_in": 3600},
                              SOON_INSTALLATION: {"expires_in": 240}, GHE_INSTALLATION: {"expires_in": 3600}},
        })
        cls.port = port = cls.origin.port
        mf.write_file(os.path.join(cls.workdir, "app-key.pem"), mf.one_line_pem(cls.app_key), private=True)
        mf.write_file(os.path.join(cls.workdir, "wrong-key.pem"), mf.one_line_pem(cls.wrong_key), private=True)
        api = f"https://api.github.test:{port}"

        def app(installation, scheme, key="GH_APP_KEY", api_url=api):
            return (f"{{ type: github-app, app_id: \"{APP_ID}\", installation_id: \"{installation}\", "
                    f"private_key: {key}, api_url: \"{api_url}\", scheme: {scheme} }}")

        config = textwrap.dedent(f"""\
            @LISTEN@
            @COMMON@
            upstream:
              ca_file: {ca}
              resolve: {{ github.test: 127.0.0.1, api.github.test: 127.0.0.1, ghe.test: 127.0.0.1 }}
            vaults:
              - name: github
                credentials:
                  GH_APP_KEY: {{ file: {cls.workdir}/app-key.pem }}
                  GH_WRONG_KEY: {{ file: {cls.workdir}/wrong-key.pem }}
                services:
                  - {{ host: github.test, port: {port}, path_prefix: /org/private.git,
                      auth: {app(GIT_INSTALLATION, "basic")} }}
                  - {{ host: api.github.test, port: {port}, path_prefix: /repos,
                      auth: {app(API_INSTALLATION, "bearer")} }}
                  - {{ host: github.test, port: {port}, path_prefix: /org/soon.git,
                      auth: {app(SOON_INSTALLATION, "basic")} }}
                  - {{ host: github.test, port: {port}, path_prefix: /org/rejected.git,
                      auth: {app(GIT_INSTALLATION, "basic", key="GH_WRONG_KEY")} }}
                  - {{ host: ghe.test, port: {port},
                      auth: {app(GHE_INSTALLATION, "basic", api_url=f"https://ghe.test:{port}/api/v3/")} }}
            egress_policies:
              default: {{ allow_https: true, allowed_domains: [], allowed_cidrs: [] }}
        """)
        cls.vg = mf.Vaultgate(cls.vaultgate_binary, cls.workdir, config)
        cls.proxy_url = cls.vg.session(["github"])
        cls.git_outputs = []

    # ---- helpers ---------------------------------------------------------
    def git(self, *args, proxy_url=None, cafile=None):
        home = tempfile.mkdtemp(dir=self.workdir, prefix="home-")
        env = mf.git_env(home, proxy_url or self.proxy_url, cafile or self.vg.ca)
        p = subprocess.run(["git", *args], cwd=home, env=env, capture_output=True, text=True, timeout=60)
        self.git_outputs.append(p.stdout + p.stderr)
        return p, home

    def url(self, host, path):
        # Only a placeholder: the real credential is vaultgate's to add.
        return f"https://x-access-token:placeholder@{host}:{self.port}{path}"

    def issued(self, installation):
        return [e["token"] for e in self.origin.events("access_tokens", ok=True, installation=installation)]

    def entries_for(self, path_start):
        return self.vg.wait_for_entries(lambda e: str(e.get("path", "")).startswith(path_start))

    # ---- cases -----------------------------------------------------------
    def test_01_git_ls_remote_and_clone_get_the_installation_token(self):
        p, _ = self.git("ls-remote", self.url("github.test", "/org/private.git"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"{self.head}\trefs/heads/main", p.stdout)
        p, home = self.git("clone", "-q", self.url("github.test", "/org/private.git"), "clone")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(home, "clone", "README")) as f:
            self.assertEqual(f.read().strip(), self.marker)

        tokens = self.issued(GIT_INSTALLATION)
        self.assertEqual(len(tokens), 1, "one installation token for the ls-remote and the clone")
        call = self.origin.events("access_tokens", ok=True, installation=GIT_INSTALLATION)[0]
        self.assertEqual(call["exp"] - call["iat"], 600, "iat = now - 60, exp = now + 540")
        self.assertEqual(call["accept"], "application/vnd.github+json")
        git_events = self.origin.events("git", host="github.test")
        self.assertTrue(git_events)
        self.assertEqual([e for e in git_events if not e["ok"]], [], "the origin never saw a request without it")
        self.assertEqual({e["token"] for e in git_events}, set(tokens))
        # The sandbox side never sees the token: not in git's output or the clone's config.
        with open(os.path.join(home, "clone", ".git", "config")) as f:
            self.assertNotIn(tokens[0], f.read())
        self.assertEqual(mf.leaks("\n".join(self.git_outputs), {"token": tokens[0]}), [])
        entries = self.entries_for("/org/private.git")
        self.assertTrue(entries and all(e.get("status") == 200 for e in entries), entries)

    def test_02_second_clone_uses_the_cached_token(self):
        before = len(self.issued(GIT_INSTALLATION))
        self.assertGreaterEqual(before, 1)
        p, _ = self.git("clone", "-q", self.url("github.test", "/org/private.git"), "again")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(self.issued(GIT_INSTALLATION)), before, "no new token call before expires_at - 5 min")

    def test_03_without_the_binding_git_gets_401(self):
        # A session without the vault: the connection is tunnelled, so git
        # sees the origin's own certificate (its CA joins vaultgate's in the
        # bundle, as a public CA would be there) and the origin sees only
        # what git sends.
        bundle = os.path.join(self.workdir, "bundle.pem")
        with open(bundle, "w") as out:
            for path in (self.vg.ca, self.origin_ca):
                with open(path) as f:
                    out.write(f.read())
        policy = {"allow_https": True, "allowed_domains": [f"github.test:{self.port}"], "allowed_cidrs": []}
        status, session = self.vg.admin("POST", "/v1/sessions", {"vault_ids": [], "egress_policy": policy})
        self.assertEqual(status, 201, session)
        ok_before = len(self.origin.events("git", ok=True))
        refused_before = len(self.origin.events("git", ok=False))
        p, _ = self.git("ls-remote", self.url("github.test", "/org/private.git"), proxy_url=session["proxy_url"],
                        cafile=bundle)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("Authentication failed", p.stderr)
        self.assertEqual(len(self.origin.events("git", ok=True)), ok_before)
        self.assertGreater(len(self.origin.events("git", ok=False)), refused_before)

    def test_04_bearer_scheme_on_the_api(self):
        status, _, body = mf.proxied_request(self.proxy_url, "api.github.test", self.port, "/repos/org/private",
                                             self.vg.ca, headers={"Authorization": "Bearer placeholder"})
        self.assertEqual(status, 200, body)
        self.assertIn(b'"full_name": "org/private"', body)
        api = self.origin.events("api", ok=True)
        self.assertEqual(len(api), 1)
        self.assertIn(api[0]["token"], self.issued(API_INSTALLATION))

    def test_05_enterprise_api_url_with_a_path_prefix(self):
        p, _ = self.git("ls-remote", self.url("ghe.test", "/org/private.git"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(self.head, p.stdout)
        calls = self.origin.events("access_tokens", ok=True, installation=GHE_INSTALLATION)
        self.assertEqual([(c["host"], c["prefix"]) for c in calls], [("ghe.test", "/api/v3")])

    def assert_refused_with_502(self, path, installation, log_reason):
        status, headers, body = mf.proxied_request(self.proxy_url, "github.test", self.port,
                                                   path + "/info/refs?service=git-upload-pack", self.vg.ca)
        self.assertEqual(status, 502, body)
        self.assertEqual(json.loads(body)["error"]["code"], "credential_unavailable")
        self.assertNotIn(self.canary.encode(), body, "nothing of the token endpoint's body reaches the client")
        self.assertEqual(self.origin.events("git", path=path + "/info/refs"), [], "never forwarded")
        entries = self.entries_for(path)
        self.assertEqual([(e.get("status"), e.get("reason")) for e in entries], [(502, log_reason)])
        self.assertTrue(self.origin.events("access_tokens", installation=installation))
        p, _ = self.git("ls-remote", self.url("github.test", path))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("502", p.stderr)

    def test_06_expires_at_within_five_minutes_is_refused(self):
        self.assert_refused_with_502("/org/soon.git", SOON_INSTALLATION, "token_missing")
        self.assertTrue(self.origin.events("access_tokens", ok=True, installation=SOON_INSTALLATION))

    def test_07_a_jwt_the_origin_rejects_is_502(self):
        before = len(self.origin.events("access_tokens", ok=False))
        self.assert_refused_with_502("/org/rejected.git", GIT_INSTALLATION, "token_endpoint_status")
        rejected = self.origin.events("access_tokens", ok=False)[before:]
        self.assertTrue(rejected and all(r["why"].startswith("JWT rejected") for r in rejected), rejected)

    def test_99_no_key_or_token_in_any_log(self):
        values = {f"app key line {i}": line for i, line in enumerate(mf.key_body_lines(self.app_key))}
        values.update({f"wrong key line {i}": line for i, line in enumerate(mf.key_body_lines(self.wrong_key))})
        values.update({f"token {i}": e["token"] for i, e in enumerate(self.origin.events("access_tokens", ok=True))})
        values["origin body"] = self.canary
        self.assertEqual(mf.leaks(self.vg.logs(), values), [])
        self.assertEqual(mf.leaks("\n".join(self.git_outputs), values), [])


if __name__ == "__main__":
    GithubAppTest.vaultgate_binary = mf.vaultgate_binary()
    unittest.main(verbosity=2)
