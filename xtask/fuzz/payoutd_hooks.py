"""Schemathesis hooks for `cargo xtask fuzz` (loaded through SCHEMATHESIS_HOOKS).

* Every request is signed (v1): `signature: <nonce>.<hex HMAC-SHA256(secret, "<nonce>.<key>")>`
  with a strictly increasing millisecond nonce, since a POST nonce is accepted once per key.
  Generated `x-api-key`, `signature` and `x-signature-version` headers are replaced.
* A few real resources are created first (a receiver whose KYC is completed, its account,
  payouts); in the fuzzing phase about half of the generated ids (path parameters, body and
  query fields) are swapped for real ones, so that requests get past "not found" into the
  handlers. The choice is Hypothesis's (a `flatmap` hook), so failures replay and shrink.
* Most generated `idempotency-key`s are made unique: Hypothesis reuses simple values, and a
  key reused with another body is (correctly) a 409, which would hide the handler.

Configuration comes from the environment that xtask sets: PAYOUTD_BASE_URL, PAYOUTD_API_KEY,
PAYOUTD_API_SECRET, PAYOUTD_SUBACCOUNT.
"""

import hashlib
import hmac
import json
import os
import random
import threading
import time

import uuid

import requests
import schemathesis
from hypothesis import strategies as st

BASE_URL = os.environ["PAYOUTD_BASE_URL"]
API_KEY = os.environ["PAYOUTD_API_KEY"]
API_SECRET = os.environ["PAYOUTD_API_SECRET"]
SUBACCOUNT = os.environ["PAYOUTD_SUBACCOUNT"]

_rng = random.SystemRandom()
_lock = threading.Lock()
_last_nonce = 0


def _nonce() -> int:
    """The current time in milliseconds, strictly increasing across calls."""
    global _last_nonce
    with _lock:
        _last_nonce = max(int(time.time() * 1000), _last_nonce + 1)
        return _last_nonce


def _auth_headers() -> dict:
    nonce = _nonce()
    message = f"{nonce}.{API_KEY}".encode()
    digest = hmac.new(API_SECRET.encode(), message, hashlib.sha256).hexdigest()
    return {"x-api-key": API_KEY, "signature": f"{nonce}.{digest}"}


def _post(path: str, body: dict) -> dict:
    response = requests.post(
        BASE_URL + path,
        data=json.dumps(body),
        headers={"content-type": "application/json", **_auth_headers()},
        timeout=30,
    )
    if response.status_code != 200:
        raise RuntimeError(f"setup: POST {path} answered {response.status_code}: {response.text}")
    return response.json().get("payload") or {}


def _setup() -> dict:
    """Real ids to steer generated requests towards."""
    suffix = f"{_rng.getrandbits(48):012x}"
    receiver = _post(
        "/api/receiver",
        {
            "subaccount_id": SUBACCOUNT,
            "first_name": "Ada",
            "last_name": "Lovelace",
            "email": f"fuzz-{suffix}@example.com",
            "dob": "1990-12-10",
            "dialcode": "61",
            "phone": "412345678",
            "address": "1 Example Street",
            "city": "Sydney",
            "state": "NSW",
            "postcode": "2000",
            "country": "AUS",
            "reference": f"fuzz-{suffix}",
        },
    )["receiver_id"]
    _post("/api/test-helpers/kyc", {"receiver_id": receiver, "kyc_status": "completed"})
    account = _post(
        "/api/receiver-account/aud/direct-entry",
        {"receiver_id": receiver, "bsb": "012002", "account_number": "12345678"},
    )["receiver_account_id"]
    payouts = [
        _post(
            "/api/payout/single",
            {"receiver_id": receiver, "account_id": account, "amount": 1000 + i, "currency": "AUD"},
        )["payout_id"]
        for i in range(3)
    ]
    return {"receiver": receiver, "account": account, "payouts": payouts}


IDS = _setup()


def _real(kind: str, pick: int = 0) -> str:
    if kind == "receiver":
        return IDS["receiver"]
    if kind == "account":
        return IDS["account"]
    if kind == "payout":
        return IDS["payouts"][pick % len(IDS["payouts"])]
    return SUBACCOUNT


# Which kind of id a path parameter names, by path.
PATH_IDS = {
    "/api/receiver/{id}": "receiver",
    "/api/receiver-account/receiver/{id}": "receiver",
    "/api/receiver-account/{id}": "account",
    "/api/payout/{id}": "payout",
    "/api/payout/{id}/cancel": "payout",
    "/api/subaccount/{id}": "subaccount",
    "/api/subaccount/balance/{id}": "subaccount",
}

# Which kind of id a body or query field names.
FIELD_IDS = {
    "subaccount_id": "subaccount",
    "receiver_id": "receiver",
    "account_id": "account",
    "receiver_account_id": "account",
}


def _maybe(original, replaced):
    """The generated value or the steered one, as Hypothesis chooses."""
    if replaced == original:
        return st.just(original)
    return st.sampled_from([replaced, original])


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    kind = PATH_IDS.get(context.operation.path)
    if not kind or not path_parameters or "id" not in path_parameters:
        return st.just(path_parameters)
    return st.integers(0, 2).flatmap(
        lambda pick: _maybe(path_parameters, {**path_parameters, "id": _real(kind, pick)})
    )


@schemathesis.hook
def flatmap_query(context, query):
    if not query or "subaccount_id" not in query:
        return st.just(query)
    return _maybe(query, {**query, "subaccount_id": SUBACCOUNT})


@schemathesis.hook
def flatmap_body(context, body):
    if not isinstance(body, dict):
        return st.just(body)
    steered = dict(body)
    for field, kind in FIELD_IDS.items():
        if field in steered:
            steered[field] = _real(kind)
    if context.operation.path == "/api/test-helpers/status" and "id" in steered:
        steered["id"] = _real("payout")
    return _maybe(body, steered)


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = {
        name: value
        for name, value in (case.headers or {}).items()
        if name.lower() not in ("x-api-key", "signature", "x-signature-version")
    }
    for name in list(headers):
        # Outside Hypothesis on purpose: a fresh key every time, from the OS's randomness.
        if name.lower() == "idempotency-key" and _rng.random() < 0.8:
            headers[name] = str(uuid.uuid4())
    headers.update(_auth_headers())
    case.headers = headers


# One JSON line per response, for the summary `cargo xtask fuzz` prints at the end (written to
# the working directory, which xtask sets to `<target dir>/fuzz`).
RESPONSES_FILE = "responses.jsonl"
_responses = open(RESPONSES_FILE, "w", encoding="utf-8")


def _error_codes(response) -> list:
    """The catalogue codes of a failure envelope; `["VERIFY_REFUSED"]` for verify's bare
    refusal; empty for anything else."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return []
    if not isinstance(body, dict):
        return []
    errors = body.get("error")
    if isinstance(errors, list):
        return [e.get("code") for e in errors if isinstance(e, dict) and isinstance(e.get("code"), str)]
    if response.status_code == 400 and set(body) == {"message"}:
        return ["VERIFY_REFUSED"]
    return []


@schemathesis.hook
def after_call(context, case, response):
    meta = case.meta
    record = {
        "operation": case.operation.label,
        "phase": meta.phase.name.value if meta else "",
        "mode": meta.generation.mode.value if meta else "",
        "status": response.status_code,
        "codes": _error_codes(response) if 400 <= response.status_code < 500 else [],
    }
    with _lock:
        _responses.write(json.dumps(record) + "\n")
        _responses.flush()
