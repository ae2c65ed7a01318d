#!/usr/bin/env python3
"""Signed requests to payoutd with Python's standard library only.

Makes a v1-signed GET of your subaccount, then a v2-signed POST that creates a receiver with an
idempotency key, sent twice as a client retrying after a lost answer would: the second answer is
the first one replayed (`idempotent-replayed: true`), never a second receiver.
docs/API.md, "Authentication", is the reference.

    PAYOUTD_URL=http://127.0.0.1:8080 PAYOUTD_API_KEY=pk_... PAYOUTD_API_SECRET=sk_... \\
    PAYOUTD_SUBACCOUNT=<subaccount id> python3 sign.py

Exits 0 when every answer was the expected one, 1 otherwise (saying which), 2 when a variable is
missing.
"""

import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.request
import uuid

_last_nonce = 0


def next_nonce() -> str:
    """Unix time in milliseconds, increasing within this process: POST nonces are single-use,
    so two requests in one millisecond still get their own."""
    global _last_nonce
    _last_nonce = max(int(time.time() * 1000), _last_nonce + 1)
    return str(_last_nonce)


def sign_v1(api_key: str, api_secret: str, nonce: str) -> str:
    """`signature` of v1: HMAC-SHA256 of `<nonce>.<api key>`."""
    mac = hmac.new(api_secret.encode(), f"{nonce}.{api_key}".encode(), hashlib.sha256)
    return f"{nonce}.{mac.hexdigest()}"


def sign_v2(api_key: str, api_secret: str, nonce: str, method: str, path: str, body: bytes) -> str:
    """`signature` of v2: HMAC-SHA256 of `<nonce>.<api key>.<METHOD>.<path with query>.<hex
    SHA-256 of the raw body>`; send `x-signature-version: 2` with it."""
    message = f"{nonce}.{api_key}.{method.upper()}.{path}.{hashlib.sha256(body).hexdigest()}"
    mac = hmac.new(api_secret.encode(), message.encode(), hashlib.sha256)
    return f"{nonce}.{mac.hexdigest()}"


def call(base, api_key, api_secret, method, path, body=None, version=2, idempotency_key=None):
    """Sends one signed request; returns (status, headers, parsed JSON body or None)."""
    raw = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    nonce = next_nonce()
    headers = {"x-api-key": api_key}
    if version == 1:
        headers["signature"] = sign_v1(api_key, api_secret, nonce)
    else:
        headers["x-signature-version"] = "2"
        headers["signature"] = sign_v2(api_key, api_secret, nonce, method, path, raw)
    if body is not None:
        headers["content-type"] = "application/json"
    if idempotency_key is not None:
        headers["idempotency-key"] = idempotency_key
    request = urllib.request.Request(
        base + path, data=raw if body is not None else None, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, answer_headers, text = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, text = error.code, error.headers, error.read()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return status, answer_headers, parsed


def main() -> int:
    try:
        base = os.environ.get("PAYOUTD_URL", "http://127.0.0.1:8080").rstrip("/")
        api_key = os.environ["PAYOUTD_API_KEY"]
        api_secret = os.environ["PAYOUTD_API_SECRET"]
        subaccount = os.environ["PAYOUTD_SUBACCOUNT"]
    except KeyError as missing:
        print(f"set {missing.args[0]} (see the top of this file)", file=sys.stderr)
        return 2

    status, _, answer = call(base, api_key, api_secret, "GET", f"/api/subaccount/{subaccount}", version=1)
    print(f"GET /api/subaccount/{subaccount} (v1): {status}")
    if status != 200:
        print(f"unexpected answer: {answer}", file=sys.stderr)
        return 1

    receiver = {
        "subaccount_id": subaccount,
        "first_name": "Ada",
        "last_name": "Lovelace",
        "email": f"ada.{uuid.uuid4().hex[:12]}@example.com",
        "dob": "1990-12-10",
        "dialcode": "61",
        "phone": "412345678",
        "address": "1 Example Street",
        "city": "Sydney",
        "state": "NSW",
        "postcode": "2000",
        "country": "AUS",
    }
    key = str(uuid.uuid4())
    first = call(base, api_key, api_secret, "POST", "/api/receiver", receiver, idempotency_key=key)
    # The same request again with the same key (a new nonce and signature, as every POST needs).
    again = call(base, api_key, api_secret, "POST", "/api/receiver", receiver, idempotency_key=key)
    for label, (status, headers, answer) in (("first", first), ("retry", again)):
        replayed = headers.get("idempotent-replayed", "false")
        print(f"POST /api/receiver (v2, {label}): {status}, idempotent-replayed: {replayed}")
        if status != 200:
            print(f"unexpected answer: {answer}", file=sys.stderr)
            return 1
    ids = [answer["payload"]["receiver_id"] for (_, _, answer) in (first, again)]
    if ids[0] != ids[1] or again[1].get("idempotent-replayed") != "true":
        print(f"the retry was not the first answer replayed: {ids}", file=sys.stderr)
        return 1
    print(f"receiver_id: {ids[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
