#!/usr/bin/python3
"""jwt-bearer end to end: a Google service-account JSON key in the vault,
exchanged (RFC 7523) at a local token endpoint for the Bearer token that the
bound origin sees.

One local HTTPS origin (google_origin.py) answers for oauth2.test (token
endpoints at /token, the key's token_uri, and /alt/token, an override) and
storage.test (the API). upstream.resolve pins both names to 127.0.0.1 and
upstream.ca_file trusts the origin's test CA. The client is an admin API
session, as a bootstrapped sandbox has one.

Usage: jwt_bearer_test.py --vaultgate PATH [unittest options]
"""

import json
import os
import secrets
import tempfile
import textwrap
import unittest

import mint_fixture as mf

CLIENT_EMAIL = "vaultgate-test@mint-test.iam.gserviceaccount.com"
SCOPES = ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/devstorage.read_only"]
OVERRIDE_SCOPES = ["https://www.googleapis.com/auth/bigquery"]


def service_account_json(private_key, key_id, token_uri):
    """A key as Google issues it, on one line (a credential value holds no line break)."""
    return json.dumps({
        "type": "service_account", "project_id": "mint-test", "private_key_id": key_id,
        "private_key": private_key, "client_email": CLIENT_EMAIL, "client_id": "109876543210987654321",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
    })


class JwtBearerTest(mf.MintTestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="vg-jwt-bearer-")
        cls.sa_key, sa_public = mf.rsa_key(pkcs8=True)
        cls.key_id = secrets.token_hex(20)
        cls.canary = "origin-body-canary-" + secrets.token_hex(8)
        ca, cert, key = mf.make_pki(cls.workdir, ["oauth2.test", "storage.test"])
        cls.origin = mf.Origin(cls.workdir, "google_origin.py", {
            "cert": cert, "key": key, "client_email": CLIENT_EMAIL, "sa_public_key": sa_public,
            "key_id": cls.key_id, "body_canary": cls.canary, "token_hosts": ["oauth2.test"],
            "api_hosts": ["storage.test"], "scopes": {"/token": SCOPES, "/alt/token": OVERRIDE_SCOPES},
        })
        cls.port = port = cls.origin.port
        cls.token_uri = f"https://oauth2.test:{port}/token"
        cls.key_json = service_account_json(cls.sa_key, cls.key_id, cls.token_uri)
        mf.write_file(os.path.join(cls.workdir, "sa.json"), cls.key_json, private=True)
        scopes = json.dumps(SCOPES)
        config = textwrap.dedent(f"""\
            @LISTEN@
            @COMMON@
            upstream:
              ca_file: {ca}
              resolve: {{ oauth2.test: 127.0.0.1, storage.test: 127.0.0.1 }}
            vaults:
              - name: google
                credentials:
                  SA_KEY: {{ file: {cls.workdir}/sa.json }}
                services:
                  - {{ host: storage.test, port: {port}, path_prefix: /storage,
                      auth: {{ type: jwt-bearer, key: SA_KEY, scopes: {scopes} }} }}
                  - {{ host: storage.test, port: {port}, path_prefix: /bigquery,
                      auth: {{ type: jwt-bearer, key: SA_KEY, scopes: {json.dumps(OVERRIDE_SCOPES)},
                               token_url: "https://oauth2.test:{port}/alt/token" }} }}
            egress_policies:
              default: {{ allow_https: true, allowed_domains: [], allowed_cidrs: [] }}
        """)
        cls.vg = mf.Vaultgate(cls.vaultgate_binary, cls.workdir, config)
        cls.proxy_url = cls.vg.session(["google"])
        cls.responses = []

    def get(self, path, proxy_url=None):
        status, headers, body = mf.proxied_request(proxy_url or self.proxy_url, "storage.test", self.port, path,
                                                   self.vg.ca, headers={"Authorization": "Bearer placeholder"})
        self.responses.append(json.dumps(headers) + body.decode("utf-8", "replace"))
        return status, body

    def tokens(self, path):
        return self.origin.events("token", ok=True, path=path)

    def test_01_the_origin_sees_the_minted_bearer_token(self):
        status, body = self.get("/storage/v1/b/bucket/o")
        self.assertEqual(status, 200, body)
        calls = self.tokens("/token")
        self.assertEqual(len(calls), 1)
        api = self.origin.events("api", ok=True, path="/storage/v1/b/bucket/o")
        self.assertEqual([(e["token"], e["authorizations"]) for e in api], [(calls[0]["token"], 1)])
        self.assertEqual(self.origin.events("api", ok=False), [], "never the placeholder, never without it")

    def test_02_the_grant_is_sent_exactly(self):
        self.get("/storage/v1/b")
        call = self.tokens("/token")[0]
        self.assertEqual(call["content_type"], "application/x-www-form-urlencoded")
        self.assertEqual(call["form_keys"], ["assertion", "grant_type"])
        self.assertEqual(call["scope"], " ".join(SCOPES))
        self.assertEqual(call["aud"], self.token_uri)
        self.assertEqual(call["kid"], self.key_id)
        self.assertEqual(call["lifetime"], 3600)
        self.assertEqual(self.origin.events("token", ok=False), [])

    def test_03_the_token_is_cached(self):
        self.get("/storage/v1/first")
        before = len(self.tokens("/token"))
        for i in range(3):
            status, _ = self.get(f"/storage/v1/again/{i}")
            self.assertEqual(status, 200)
        self.assertEqual(len(self.tokens("/token")), before)

    def test_04_token_url_overrides_the_key_token_uri(self):
        status, body = self.get("/bigquery/v2/projects")
        self.assertEqual(status, 200, body)
        calls = self.tokens("/alt/token")
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0]["aud"], f"https://oauth2.test:{self.port}/alt/token")
        self.assertEqual(calls[0]["scope"], " ".join(OVERRIDE_SCOPES))
        api = self.origin.events("api", ok=True, path="/bigquery/v2/projects")
        self.assertEqual([e["token"] for e in api], [calls[0]["token"]])

    def test_05_a_malformed_key_is_502_and_never_shown(self):
        # Cut in the middle of the PEM: the text still holds key material.
        broken = self.key_json[: self.key_json.index("private_key\"") + 600]
        self.assertIn(mf.key_body_lines(self.sa_key)[3], broken.replace("\\n", "\n"))
        status, vault = self.vg.admin("POST", "/v1/vaults", {"name": "broken"})
        self.assertEqual(status, 201, vault)
        status, body = self.vg.admin("POST", "/v1/vaults/broken/credentials", {"name": "SA_BROKEN", "value": broken})
        self.assertEqual(status, 201, body)
        service = {"host": "storage.test", "port": self.port, "path_prefix": "/broken",
                   "auth_config": {"type": "jwt-bearer", "key": "SA_BROKEN", "scopes": SCOPES}}
        status, body = self.vg.admin("POST", "/v1/vaults/broken/services", service)
        self.assertEqual(status, 201, body)
        calls_before = len(self.origin.events("token"))
        status, body = self.get("/broken/x", proxy_url=self.vg.session(["broken"]))
        self.assertEqual(status, 502, body)
        self.assertEqual(json.loads(body)["error"]["code"], "credential_unavailable")
        self.assertEqual(len(self.origin.events("token")), calls_before, "nothing to send with a broken key")
        self.assertEqual(self.origin.events("api", path="/broken/x"), [], "never forwarded")
        entries = self.vg.wait_for_entries(lambda e: e.get("path") == "/broken/x")
        self.assertEqual([(e.get("status"), e.get("reason")) for e in entries], [(502, "token_input_invalid")])
        key_lines = {f"key line {i}": line for i, line in enumerate(mf.key_body_lines(self.sa_key))}
        key_lines["escaped key"] = broken[broken.index("-----BEGIN"):][:80]
        self.assertEqual(mf.leaks(self.vg.logs() + "\n".join(self.responses), key_lines), [])

    def test_99_no_key_or_token_in_any_log_or_response(self):
        values = {f"key line {i}": line for i, line in enumerate(mf.key_body_lines(self.sa_key))}
        values.update({f"token {i}": e["token"] for i, e in enumerate(self.origin.events("token", ok=True))})
        values["origin body"] = self.canary
        self.assertEqual(mf.leaks(self.vg.logs(), values), [])
        self.assertEqual(mf.leaks("\n".join(self.responses), values), [])


if __name__ == "__main__":
    JwtBearerTest.vaultgate_binary = mf.vaultgate_binary()
    unittest.main(verbosity=2)
