#!/usr/bin/python3
"""A sandbox's AWS client for vaultgate's aws-sigv4 tests: real botocore
clients holding placeholder keys, sending through vaultgate (its proxy port,
its CA bundle). They sign with the placeholders; vaultgate re-signs.

    sandbox_client.py PROXY_PORT CA_BUNDLE ORIGIN_PORT
Prints one line per call ("dynamodb 200", ...); exits 1 on the first failure.
"""
import sys

import botocore.session
from botocore.config import Config


def main():
    proxy_port, ca_bundle, origin_port = sys.argv[1], sys.argv[2], sys.argv[3]
    session = botocore.session.get_session()
    config = Config(proxies={"https": f"http://127.0.0.1:{proxy_port}"}, retries={"max_attempts": 1},
                    s3={"addressing_style": "path"})
    placeholders = {"aws_access_key_id": "AKIAPLACEHOLDER00000", "aws_secret_access_key": "placeholder-secret",
                    "aws_session_token": "placeholder-session-token", "verify": ca_bundle, "config": config}

    dynamodb = session.create_client("dynamodb", region_name="us-west-2", **placeholders,
                                      endpoint_url=f"https://dynamodb.us-west-2.amazonaws.com:{origin_port}")
    answer = dynamodb.list_tables(Limit=5)
    print("dynamodb", answer["ResponseMetadata"]["HTTPStatusCode"], flush=True)

    s3 = session.create_client("s3", region_name="us-east-1", **placeholders,
                               endpoint_url=f"https://s3.us-east-1.amazonaws.com:{origin_port}")
    answer = s3.put_object(Bucket="sandbox-bucket", Key="reports/2026 q4.txt", Body=b"quarterly numbers\n")
    print("s3", answer["ResponseMetadata"]["HTTPStatusCode"], flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the test reads the reason
        print("failed:", type(e).__name__, e, flush=True)
        sys.exit(1)
