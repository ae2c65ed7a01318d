"""Schemathesis hooks for `cargo xtask fuzz` (loaded through SCHEMATHESIS_HOOKS).

* Every request is signed (v1) by docs/examples/signing/sign.py: `signature: <nonce>.<hex
  HMAC-SHA256(secret, "<nonce>.<key>")>` with a strictly increasing millisecond nonce, since a
  POST nonce is accepted once per key.
  Generated `x-api-key`, `signature` and `x-signature-version` headers are replaced.
* Real resources are created first: receivers (KYC completed, and some left pending), an
  account of every payout method for each (one receiver's confirmed, the other's unconfirmed
  with their confirmation tokens), payouts in every currency and an AUD batch in progress.
* `map_case` steers most positive cases (every phase) towards what the server accepts: ids in
  paths, queries and bodies drawn from those resources (and from what the run creates); bodies
  completed where the schema cannot say the rule (account numbers with valid check digits per
  method, a currency matching the account, unique e-mail addresses and references); query
  filters made valid, cursors mostly left out. The choices are seeded from the case itself, so
  a failure replays and shrinks. The rest of the cases, and every negative one, go as
  generated: they exercise "not found" and validation.
* Most generated `idempotency-key`s are made unique: Hypothesis reuses simple values, and a
  key reused with another body is (correctly) a 409, which would hide the handler.
* Every response is recorded in `responses.jsonl` (operation, phase, mode, status, error
  codes); xtask prints a per-operation summary from it.

Configuration comes from the environment that xtask sets: PAYOUTD_BASE_URL, PAYOUTD_API_KEY,
PAYOUTD_API_SECRET, PAYOUTD_SUBACCOUNT.
"""

import hashlib
import json
import os
import random
import re
import threading

import uuid

import requests
import schemathesis
from hypothesis import strategies as st

import sign as signing  # docs/examples/signing/sign.py, on PYTHONPATH (xtask fuzz)

BASE_URL = os.environ["PAYOUTD_BASE_URL"]
API_KEY = os.environ["PAYOUTD_API_KEY"]
API_SECRET = os.environ["PAYOUTD_API_SECRET"]
SUBACCOUNT = os.environ["PAYOUTD_SUBACCOUNT"]

_rng = random.SystemRandom()
_lock = threading.Lock()


def _auth_headers() -> dict:
    """v1 headers, signed by the documented example (docs/examples/signing/sign.py): the hooks
    carry no signing code of their own. Its nonces increase within the process; the lock keeps
    two threads from reading the same one."""
    with _lock:
        nonce = signing.next_nonce()
    return {"x-api-key": API_KEY, "signature": signing.sign_v1(API_KEY, API_SECRET, nonce)}


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


def _get(path: str, params: dict) -> dict:
    response = requests.get(BASE_URL + path, params=params, headers=_auth_headers(), timeout=30)
    if response.status_code != 200:
        raise RuntimeError(f"setup: GET {path} answered {response.status_code}: {response.text}")
    return response.json()


# --- Values our validation accepts ------------------------------------------------------------
#
# Where a rule is beyond a schema (checksums, registries, uniqueness, a currency matching the
# account), these make values that pass it; the hooks put them into generated requests.


def _digits(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(low, high)))


def _iban_de(rng: random.Random) -> str:
    """A German IBAN with correct mod-97 check digits."""
    bban = _digits(rng, 18, 18)
    # Letters count as 10..35: D = 13, E = 14.
    check = 98 - int(bban + "131400") % 97
    return f"DE{check:02d}{bban}"


def _nz_direct_credit(rng: random.Random) -> str:
    """A New Zealand account of bank 01, branch 0902 whose base passes algorithm A (weights
    over the 18-digit form, modulus 11; the suffix is not weighed)."""
    weights = [0, 0, 6, 3, 7, 9, 0, 0, 10, 5, 8, 4, 2, 1]
    while True:
        base = f"{rng.randint(1, 989999):07d}"
        digits = [int(c) for c in "010902" + "0" + base]
        if sum(w * d for w, d in zip(weights, digits)) % 11 == 0:
            return f"01-0902-{base}-{rng.randint(0, 99):02d}"


# Valid ABA routing numbers (3-7-1 checksum, Federal Reserve prefix) and Canadian routing
# numbers of Payments Canada members (`0` + institution + transit).
ACH_ROUTING = ["021000021", "011000015", "026009593", "121000358"]
EFT_ROUTING = ["000100002", "000212345", "000300001", "000400002", "12345-003"]


def _account_fields(method: str, rng: random.Random) -> dict:
    """A create body's account fields for `method` (the route, e.g. `usd/ach`)."""
    if method == "aud/direct-entry":
        return {"bsb": rng.choice(["012002", "012-002", "083 004"]), "account_number": _digits(rng, 5, 9)}
    if method == "usd/ach":
        return {
            "routing_number": rng.choice(ACH_ROUTING),
            "account_number": _digits(rng, 4, 17),
            "account_type": rng.choice(["checking", "savings"]),
        }
    if method == "cad/eft":
        return {
            "routing_number": rng.choice(EFT_ROUTING),
            "account_number": _digits(rng, 7, 12),
            "account_type": rng.choice(["checking", "savings"]),
        }
    if method == "cad/digital":
        fields = {"recipient": f"pay-{rng.getrandbits(40):010x}@example.com", "name": "Ada Lovelace"}
        if rng.random() < 0.5:
            fields["description"] = "Fuzz account"
        return fields
    if method == "eur/sepa":
        return {"iban": _iban_de(rng), "bic": rng.choice(["DEUTDEFF", "COBADEFFXXX"])}
    if method == "nzd/direct-credit":
        return {"account_number": _nz_direct_credit(rng)}
    raise ValueError(method)


METHODS = {
    "aud/direct-entry": "AUD",
    "usd/ach": "USD",
    "cad/eft": "CAD",
    "cad/digital": "CAD",
    "eur/sepa": "EUR",
    "nzd/direct-credit": "NZD",
}


def _receiver_body(rng: random.Random) -> dict:
    suffix = f"{rng.getrandbits(48):012x}"
    return {
        "subaccount_id": SUBACCOUNT,
        "first_name": rng.choice(["Ada", "Zoë", "Jean-Luc", "O'Brien", "Łukasz"]),
        "last_name": rng.choice(["Lovelace", "Brontë", "d'Arc", "Nguyễn"]),
        "email": f"fuzz-{suffix}@example.com",
        "dob": f"{rng.randint(1930, 2005)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "dialcode": rng.choice(["61", "+1", "44"]),
        "phone": _digits(rng, 4, 15),
        "address": f"{rng.randint(1, 999)} Example Street",
        "city": rng.choice(["Sydney", "St. Kilda", "Wagga Wagga"]),
        "state": "NSW",
        "postcode": _digits(rng, 4, 4),
        "country": rng.choice(["AUS", "nzl", "USA", "CAN", "DEU"]),
        "reference": f"fuzz-{suffix}",
    }


def _setup() -> dict:
    """Real resources to steer generated requests towards: receivers (KYC completed, and
    some left pending for the KYC helper), an account of every payout method (confirmed, and
    unconfirmed ones with their confirmation tokens), payouts in several states and a batch."""
    rng = random.Random(_rng.getrandbits(64))
    ids = {"receivers": [], "pending_receivers": [], "accounts": [], "unconfirmed": [],
           "payouts": [], "in_progress": [], "batches": [], "tokens": []}
    for _ in range(2):
        receiver = _post("/api/receiver", _receiver_body(rng))["receiver_id"]
        _post("/api/test-helpers/kyc", {"receiver_id": receiver, "kyc_status": "completed"})
        ids["receivers"].append(receiver)
    for _ in range(2):
        ids["pending_receivers"].append(_post("/api/receiver", _receiver_body(rng))["receiver_id"])
    for receiver in ids["receivers"]:
        for method, asset in METHODS.items():
            body = {"receiver_id": receiver, **_account_fields(method, rng)}
            account = _post(f"/api/receiver-account/{method}", body)["receiver_account_id"]
            ids["accounts"].append({"id": account, "receiver": receiver, "method": method,
                                    "asset": asset, "fields": body})
    # The first receiver's accounts are confirmed; the second's stay unconfirmed, their links
    # usable by the confirmation page.
    for account in ids["accounts"]:
        if account["receiver"] == ids["receivers"][0]:
            _post("/api/test-helpers/account",
                  {"receiver_account_id": account["id"], "confirm_status": "confirmed"})
        else:
            ids["unconfirmed"].append(account["id"])
            ids["tokens"].extend(_tokens(account["id"]))
    confirmed = [a for a in ids["accounts"] if a["id"] not in ids["unconfirmed"]]
    for i, account in enumerate(confirmed * 2):
        ids["payouts"].append(_post("/api/payout/single", {
            "receiver_id": account["receiver"], "account_id": account["id"],
            "amount": 1000 + i, "currency": account["asset"]})["payout_id"])
    # The AUD payouts go into a batch, in progress: the status helper settles them.
    batch = _post("/api/test-helpers/batch/run", {"subaccount_id": SUBACCOUNT, "asset": "AUD"})
    ids["batches"].append(batch["batch_id"])
    aud = {a["id"] for a in confirmed if a["asset"] == "AUD"}
    for payout in ids["payouts"]:
        detail = _get(f"/api/payout/{payout}", {})["payload"]
        if detail["receiver_account"]["id"] in aud and detail["status"] == "in_progress":
            ids["in_progress"].append(payout)
    return ids


def _tokens(account: str) -> list:
    """The confirmation tokens sent for `account` (from the links the sandbox notifier kept)."""
    sent = _get("/api/test-helpers/notifications", {"receiver_account_id": account})
    return [n["confirm_url"].rstrip("/").rsplit("/", 1)[-1] for n in sent.get("payload") or []]


IDS = _setup()

# Ids the run itself creates (from 2xx answers), so later requests can use them too.
_created = {"receivers": [], "accounts": [], "payouts": []}


def _pool(kind: str) -> list:
    """Every known id of `kind`."""
    if kind == "subaccount":
        return [SUBACCOUNT]
    if kind == "receiver":
        return IDS["receivers"] + IDS["pending_receivers"] + _created["receivers"]
    if kind == "account":
        return [a["id"] for a in IDS["accounts"]] + _created["accounts"]
    if kind == "payout":
        return IDS["payouts"] + _created["payouts"]
    if kind == "token":
        # The newest: a confirmed account's tokens are spent.
        return IDS["tokens"][-8:]
    raise ValueError(kind)


# Which kind of id a path parameter names, by path.
PATH_IDS = {
    "/api/receiver/{id}": ("id", "receiver"),
    "/api/receiver-account/receiver/{id}": ("id", "receiver"),
    "/api/receiver-account/{id}": ("id", "account"),
    "/api/payout/{id}": ("id", "payout"),
    "/api/payout/{id}/cancel": ("id", "payout"),
    "/api/subaccount/{id}": ("id", "subaccount"),
    "/api/subaccount/balance/{id}": ("id", "subaccount"),
    "/confirm/{token}": ("token", "token"),
}

# The share of steered requests: the rest keep their generated ids and values, so that
# "not found" and validation paths are exercised too.
STEER = 0.85


def _case_rng(case) -> random.Random:
    """A generator seeded from the case's generated parts: the same case is steered the same
    way, so a failure replays and Hypothesis can shrink it."""
    parts = [case.operation.label, case.path_parameters, case.query, case.body]
    seed = hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).digest()
    return random.Random(seed)


def _is_plain_name(value) -> bool:
    """Close to the server's name rule: letters, spaces, apostrophes and hyphens, one letter
    at least (the server also normalises and bounds; a value it refuses stays a 400)."""
    return (isinstance(value, str) and 0 < len(value.strip()) <= 255
            and any(c.isalpha() for c in value)
            and all(c.isalpha() or c in " '’-" for c in value))


def _steer_receiver(body: dict, rng: random.Random, fresh: random.Random) -> dict:
    valid = _receiver_body(fresh)
    steered = {}
    for field, value in valid.items():
        generated = body.get(field)
        if field in ("first_name", "last_name") and _is_plain_name(generated):
            steered[field] = generated
        elif field == "reference" and rng.random() < 0.3:
            continue
        else:
            steered[field] = value
    if _is_plain_name(body.get("middle_name")):
        steered["middle_name"] = body["middle_name"]
    if body.get("gender") in ("M", "F", "m", "f"):
        steered["gender"] = body["gender"]
    return steered


def _steer_body(path: str, body: dict, rng: random.Random, fresh: random.Random) -> dict:
    """A body the server's rules accept, keeping what the generator made where it fits.
    `rng` makes the choices (from the case), `fresh` the values that must not repeat (e-mail
    addresses, references, account numbers): Hypothesis generates some cases more than once."""
    accounts = IDS["accounts"]
    if path == "/api/receiver":
        return _steer_receiver(body, rng, fresh)
    if path.startswith("/api/receiver-account/") and path[len("/api/receiver-account/"):] in METHODS:
        method = path[len("/api/receiver-account/"):]
        receiver = rng.choice(IDS["receivers"] + _created["receivers"][-5:])
        return {"receiver_id": receiver, **_account_fields(method, fresh)}
    if path == "/api/receiver-account/verify":
        account = rng.choice(accounts)
        if rng.random() < 0.5:
            # Fresh values: most likely no match.
            fields = _account_fields(account["method"], fresh)
        else:
            fields = {k: v for k, v in account["fields"].items() if k != "receiver_id"}
        # Verify looks accounts up by their matchable fields only (not `name`, `description`).
        names = sorted(k for k in fields if k not in ("name", "description"))
        chosen = rng.sample(names, rng.randint(1, len(names)))
        return {"subaccount_id": SUBACCOUNT, "account_data": {k: fields[k] for k in chosen}}
    if path == "/api/payout/single":
        account = rng.choice(accounts)
        amount = body.get("amount")
        if not (isinstance(amount, int) and 1 <= amount <= 10**12):
            amount = rng.randint(1, 100_000)
        steered = {
            "receiver_id": account["receiver"],
            "account_id": account["id"],
            "amount": amount,
            "currency": rng.choice([account["asset"], account["asset"].lower()]),
        }
        if rng.random() < 0.5:
            steered["reference"] = f"fuzz-{fresh.getrandbits(48):012x}"
        note = body.get("note")
        if isinstance(note, str) and len(note) <= 255 and "\0" not in note:
            steered["note"] = note
        return steered
    if path == "/api/test-helpers/account":
        pool = IDS["unconfirmed"] + _created["accounts"][-5:] + [a["id"] for a in accounts]
        return {"receiver_account_id": rng.choice(pool), "confirm_status": "confirmed"}
    if path == "/api/test-helpers/kyc":
        pool = IDS["pending_receivers"] + _created["receivers"][-10:]
        return {"receiver_id": rng.choice(pool), "kyc_status": rng.choice(["completed", "failed"])}
    if path == "/api/test-helpers/status":
        if rng.random() < 0.8 and IDS["in_progress"]:
            target = {"id": rng.choice(IDS["in_progress"]), "type": "payout"}
        else:
            target = {"id": rng.choice(IDS["batches"]), "type": "batch"}
        return {**target, "status": rng.choice(["success", "fail"])}
    if path == "/api/test-helpers/batch/run":
        return {"subaccount_id": SUBACCOUNT, "asset": rng.choice(list(set(METHODS.values())))}
    return body


def _valid_minute(value) -> bool:
    return isinstance(value, str) and re.fullmatch(
        r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8]) ([01][0-9]|2[0-3]):[0-5][0-9]", value
    ) is not None


def _steer_query(path: str, query: dict, rng: random.Random) -> dict:
    steered = dict(query)
    if "subaccount_id" in steered:
        steered["subaccount_id"] = SUBACCOUNT
    if path == "/api/test-helpers/notifications":
        steered["receiver_account_id"] = rng.choice(_pool("account"))
    # A generated cursor is a tampered one (REQ003): mostly leave it out.
    if "lastkey" in steered and rng.random() < 0.9:
        del steered["lastkey"]
    for field in ("from", "to"):
        if field in steered and not _valid_minute(steered[field]):
            steered[field] = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} 12:00"
    if path == "/api/receiver":
        if "gender" in steered and steered["gender"] not in ("M", "F", "m", "f"):
            steered["gender"] = rng.choice("MFmf")
        if "dob" in steered and not re.fullmatch(r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])", str(steered["dob"])):
            steered["dob"] = "1990-12-10"
        if "country" in steered:
            steered["country"] = rng.choice(["AUS", "nzl", "USA"])
    # Exact-match filters are at most 255 characters (else REQ002).
    for field, value in list(steered.items()):
        if isinstance(value, str) and len(value) > 255:
            steered[field] = value[:255]
    return steered


def _positive(case, location: str) -> bool:
    """Whether the case's part at `location` (`path`, `query`, `body`) was generated to fit the
    schema. A negative part is left alone: its violation is the point. (Header violations are
    not looked at: the hooks replace the signature headers and most idempotency keys, and
    schemathesis then counts such a case as positive.)"""
    meta = case.meta
    if meta is None:
        return True
    for where, info in meta.components.items():
        if where.value == location:
            return info.mode.value == "positive"
    # A part the metadata does not name was not where the case's violation went.
    return bool(meta.components) or meta.generation.mode.value == "positive"


@schemathesis.hook
def map_case(context, case):
    """Steers the positive parts of a case towards real resources and valid values. Applies
    in every phase."""
    rng = _case_rng(case)
    if rng.random() >= STEER:
        return case
    path = case.operation.path
    target = PATH_IDS.get(path)
    if (target and case.path_parameters and target[0] in case.path_parameters
            and _positive(case, "path")):
        pool = _pool(target[1])
        if pool:
            case.path_parameters = {**case.path_parameters, target[0]: rng.choice(pool)}
    if isinstance(case.query, dict) and case.query and _positive(case, "query"):
        case.query = _steer_query(path, case.query, rng)
    if isinstance(case.body, dict) and _positive(case, "body"):
        case.body = _steer_body(path, case.body, rng, random.Random(_rng.getrandbits(64)))
    return case


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
    if 200 <= response.status_code < 300 and case.method.upper() == "POST":
        _remember_created(response)


def _remember_created(response) -> None:
    """Adds the id a create answered with to the pool of its kind."""
    try:
        payload = json.loads(response.content).get("payload")
    except (ValueError, AttributeError):
        return
    if not isinstance(payload, dict):
        return
    for field, kind in (("receiver_account_id", "accounts"), ("payout_id", "payouts"),
                        ("receiver_id", "receivers")):
        if isinstance(payload.get(field), str):
            _created[kind].append(payload[field])
            if kind == "accounts":
                IDS["tokens"].extend(_tokens(payload[field]))
            return
