#!/usr/bin/python3
"""s3-tap-ci helper: multipart upload and listings through boto3 (Debian's python3-boto3).

Usage: s3_boto_check.py ENDPOINT BUCKET
Prints "ok - NAME" / "not ok - NAME: why" lines; exits 1 if anything failed.
"""
import hashlib
import os
import sys

import boto3
from botocore.config import Config

endpoint, bucket = sys.argv[1], sys.argv[2]
s3 = boto3.client(
    "s3", endpoint_url=endpoint, region_name="us-east-1",
    aws_access_key_id="ernic", aws_secret_access_key="ernic",
    config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                  connect_timeout=10, read_timeout=60),
)
failed = 0


def check(name, cond, why=""):
    global failed
    if cond:
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"not ok - {name}: {why}")


def attempt(name, fn):
    try:
        fn()
    except Exception as e:  # a check that raises is a failed check
        check(name, False, repr(e))


def multipart():
    p1 = os.urandom(5 * 1024 * 1024)
    p2 = os.urandom(1024 + 7)
    up = s3.create_multipart_upload(Bucket=bucket, Key="boto/mp.bin")
    uid = up["UploadId"]
    r1 = s3.upload_part(Bucket=bucket, Key="boto/mp.bin", UploadId=uid, PartNumber=1, Body=p1)
    r2 = s3.upload_part(Bucket=bucket, Key="boto/mp.bin", UploadId=uid, PartNumber=2, Body=p2)
    parts = s3.list_parts(Bucket=bucket, Key="boto/mp.bin", UploadId=uid)["Parts"]
    check("boto-list-parts", [p["PartNumber"] for p in parts] == [1, 2], str(parts))
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="boto/mp.bin", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r1["ETag"]},
                                   {"PartNumber": 2, "ETag": r2["ETag"]}]})
    want = hashlib.md5(hashlib.md5(p1).digest() + hashlib.md5(p2).digest()).hexdigest() + "-2"
    check("boto-multipart-etag", done["ETag"].strip('"') == want, done["ETag"])
    body = s3.get_object(Bucket=bucket, Key="boto/mp.bin")["Body"].read()
    check("boto-multipart-content", body == p1 + p2, f"{len(body)} bytes")
    # An aborted upload leaves nothing behind.
    up = s3.create_multipart_upload(Bucket=bucket, Key="boto/aborted")
    s3.upload_part(Bucket=bucket, Key="boto/aborted", UploadId=up["UploadId"], PartNumber=1, Body=b"x")
    s3.abort_multipart_upload(Bucket=bucket, Key="boto/aborted", UploadId=up["UploadId"])
    try:
        s3.head_object(Bucket=bucket, Key="boto/aborted")
        check("boto-abort", False, "object exists")
    except s3.exceptions.ClientError as e:
        check("boto-abort", e.response["Error"]["Code"] in ("404", "NoSuchKey"), repr(e))


def listings():
    for k in ("boto/l/a", "boto/l/b", "boto/l/sub/c", "boto/l/sub/d"):
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    v2 = s3.list_objects_v2(Bucket=bucket, Prefix="boto/l/", Delimiter="/")
    keys = [c["Key"] for c in v2.get("Contents", [])]
    prefixes = [p["Prefix"] for p in v2.get("CommonPrefixes", [])]
    check("boto-list-v2-delimiter", keys == ["boto/l/a", "boto/l/b"] and prefixes == ["boto/l/sub/"],
          f"{keys} {prefixes}")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="boto/l/",
                                                         PaginationConfig={"PageSize": 1})
    all_keys = [c["Key"] for page in pages for c in page.get("Contents", [])]
    check("boto-list-v2-paginated", len(all_keys) == 4, str(all_keys))
    v1 = s3.list_objects(Bucket=bucket, Prefix="boto/l/sub/")
    check("boto-list-v1", [c["Key"] for c in v1.get("Contents", [])] == ["boto/l/sub/c", "boto/l/sub/d"],
          str(v1.get("Contents")))
    head = s3.head_object(Bucket=bucket, Key="boto/l/a")
    check("boto-head", head["ContentLength"] == len(b"boto/l/a")
          and head["ETag"].strip('"') == hashlib.md5(b"boto/l/a").hexdigest(), str(head))
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    check("boto-list-buckets", buckets == [bucket], str(buckets))
    for k in ("boto/l/a", "boto/l/b", "boto/l/sub/c", "boto/l/sub/d", "boto/mp.bin"):
        s3.delete_object(Bucket=bucket, Key=k)
    left = s3.list_objects_v2(Bucket=bucket, Prefix="boto/").get("KeyCount", -1)
    check("boto-deleted", left == 0, f"{left} keys left")


attempt("boto-multipart", multipart)
attempt("boto-listings", listings)
sys.exit(1 if failed else 0)
