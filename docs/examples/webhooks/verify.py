#!/usr/bin/env python3
"""Verifies a payoutd webhook delivery (Standard Webhooks, v1 signatures).

Standard library only. Call verify() from your HTTP handler with the headers and the raw body
bytes, or run this file:

    python3 verify.py SECRET WEBHOOK_ID WEBHOOK_TIMESTAMP WEBHOOK_SIGNATURE [BODY_FILE] < body

It exits 0 when the delivery is genuine and 1 when it is not.
"""
import base64
import hashlib
import hmac
import sys
import time

TOLERANCE_SECS = 5 * 60  # how far webhook-timestamp may be from our clock (replay protection)


class Rejected(Exception):
    """The delivery is not genuine; the message says why ("timestamp" or "signature")."""


def verify(secret: str, msg_id: str, timestamp: str, signatures: str, body: bytes) -> None:
    """Raises Rejected unless one of the "v1," signatures signs this id, timestamp and raw body."""
    if not timestamp.isascii() or not timestamp.isdigit():
        raise Rejected("timestamp")
    if abs(time.time() - int(timestamp)) > TOLERANCE_SECS:
        raise Rejected("timestamp")
    key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    # During a secret rotation there are several signatures: any one will do.
    for entry in signatures.split(" "):
        if entry.startswith("v1,") and hmac.compare_digest(entry[3:].encode(), expected):
            return
    raise Rejected("signature")


def main() -> int:
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    secret, msg_id, timestamp, signatures = sys.argv[1:5]
    if len(sys.argv) == 6:
        with open(sys.argv[5], "rb") as file:
            body = file.read()
    else:
        body = sys.stdin.buffer.read()
    try:
        verify(secret, msg_id, timestamp, signatures, body)
    except Rejected as why:
        print(f"rejected: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
