#!/usr/bin/env python3
"""Signs requests with python3-botocore, as a second opinion on vaultgate's SigV4.

Usage: botocore_sign.py CASES.json
CASES.json is a list of {method, url, headers: [[name, value]...], body,
access_key_id, secret_access_key, session_token (or null), region, service,
amz_date}. Prints botocore's Authorization header for each case, one a line.
python3-botocore comes from scripts/install-deps.sh; without it this fails.
"""
import datetime
import json
import sys

from botocore import auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def fixed_clock(amz_date):
    instant = datetime.datetime.strptime(amz_date, auth.SIGV4_TIMESTAMP)

    class Clock(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return instant

        @classmethod
        def now(cls, tz=None):
            return instant.replace(tzinfo=tz) if tz else instant

    return Clock


def sign(case):
    credentials = Credentials(case["access_key_id"], case["secret_access_key"], case.get("session_token"))
    signer_class = auth.S3SigV4Auth if case["service"] == "s3" else auth.SigV4Auth
    signer = signer_class(credentials, case["service"], case["region"])
    request = AWSRequest(method=case["method"], url=case["url"], data=case["body"].encode())
    for name, value in case["headers"]:
        request.headers[name] = value
    saved = auth.datetime.datetime
    auth.datetime.datetime = fixed_clock(case["amz_date"])
    try:
        signer.add_auth(request)
    finally:
        auth.datetime.datetime = saved
    return request.headers["Authorization"]


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    for case in cases:
        print(sign(case))


if __name__ == "__main__":
    main()
