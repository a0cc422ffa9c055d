"""The S3-compatible server of hearth's fleet tests: moto's server (scripts/s3.sh installs it), on an address
the caller names and a port the system picks.

    python scripts/s3_server.py HOST [--bucket NAME]... [--put s3://BUCKET/KEY=FILE]...

Makes the buckets, uploads the files, prints `s3 server listening on http://HOST:PORT`, and serves until its
standard input closes — so a test that dies takes its server with it.
"""

import argparse
import logging
import sys

import boto3
from moto.server import ThreadedMotoServer


def client(endpoint):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="hearth-test",
        aws_secret_access_key="hearth-test-secret",
        region_name="us-east-1",
    )


def split(url):
    """s3://BUCKET/KEY=FILE into (BUCKET, KEY, FILE)."""
    target, _, file = url.rpartition("=")
    bucket, _, key = target.removeprefix("s3://").partition("/")
    return bucket, key, file


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host", nargs="?", default="127.0.0.1")
    parser.add_argument("--bucket", action="append", default=[])
    parser.add_argument("--put", action="append", default=[])
    args = parser.parse_args()

    # One line per request would bury the test's own output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address=args.host, port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3 = client(endpoint)
    for bucket in args.bucket:
        s3.create_bucket(Bucket=bucket)
    for url in args.put:
        bucket, key, file = split(url)
        s3.upload_file(file, bucket, key)
    print(f"s3 server listening on {endpoint}", flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
