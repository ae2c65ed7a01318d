#!/usr/bin/env python3
"""Pays a receiver in the sandbox with the Python client openapi-python-client generates from
docs/openapi.json (docs/API.md, "Generated clients"): a receiver, its KYC decided and an AUD
account confirmed through the sandbox helpers, a payout of 100.00 AUD, each read back.

    openapi-python-client generate --path docs/openapi.json --output-path payoutd-client
    PYTHONPATH=payoutd-client:docs/examples/clients \\
    PAYOUTD_URL=http://127.0.0.1:8080 PAYOUTD_API_KEY=pk_... PAYOUTD_API_SECRET=sk_... \\
    PAYOUTD_SUBACCOUNT=<subaccount id> python3 docs/examples/clients/pay.py

Prints each id and status; exits 0 when every answer was the expected one, 1 otherwise
(saying which), 2 when a variable is missing.
"""

import datetime
import os
import sys
import uuid

from payoutd_client import AuthenticatedClient
from payoutd_client.api.payouts import create_payout, get_payout
from payoutd_client.api.receiver_accounts import create_receiver_account_aud_direct_entry
from payoutd_client.api.receivers import create_receiver, get_receiver
from payoutd_client.api.sandbox import sandbox_confirm_account, sandbox_decide_kyc
from payoutd_client.models import (
    AccountHelperBody,
    AssetInput,
    CreatePayoutBody,
    CreateReceiverAccountAudDirectEntryBody,
    CreateReceiverBody,
    KycHelperBody,
)
from payoutd_signing import signing_hook


def expect(what, response):
    """The parsed success envelope of `response`; exits 1 on any other answer."""
    if response.status_code != 200:
        print(f"{what}: {response.status_code} {response.content.decode()}", file=sys.stderr)
        sys.exit(1)
    return response.parsed


def main() -> int:
    try:
        base = os.environ.get("PAYOUTD_URL", "http://127.0.0.1:8080")
        api_key = os.environ["PAYOUTD_API_KEY"]
        api_secret = os.environ["PAYOUTD_API_SECRET"]
        subaccount = uuid.UUID(os.environ["PAYOUTD_SUBACCOUNT"])
    except KeyError as missing:
        print(f"set {missing.args[0]} (see the top of this file)", file=sys.stderr)
        return 2

    # The client sends the API key; the hook adds the signature.
    client = AuthenticatedClient(
        base_url=base,
        token=api_key,
        prefix="",
        auth_header_name="x-api-key",
        httpx_args={"event_hooks": {"request": [signing_hook(api_key, api_secret)]}},
    )
    with client:
        created = expect("create receiver", create_receiver.sync_detailed(
            client=client,
            idempotency_key=str(uuid.uuid4()),
            body=CreateReceiverBody(
                subaccount_id=subaccount,
                first_name="Ada",
                last_name="Lovelace",
                email=f"ada.{uuid.uuid4().hex[:12]}@example.com",
                dob=datetime.date(1990, 12, 10),
                dialcode="61",
                phone="412345678",
                address="1 Example Street",
                city="Sydney",
                state="NSW",
                postcode="2000",
                country="AUS",
            ),
        ))
        receiver_id = created.payload.receiver_id
        print(f"receiver_id: {receiver_id}")
        expect("decide KYC", sandbox_decide_kyc.sync_detailed(
            client=client,
            body=KycHelperBody(receiver_id=receiver_id, kyc_status="completed"),
        ))
        receiver = expect("get receiver", get_receiver.sync_detailed(receiver_id, client=client))
        print(f"receiver: {receiver.payload.first_name} {receiver.payload.last_name}, {receiver.payload.status}")

        account = expect("create account", create_receiver_account_aud_direct_entry.sync_detailed(
            client=client,
            body=CreateReceiverAccountAudDirectEntryBody(
                receiver_id=receiver_id, bsb="012-002", account_number="123456789"
            ),
        ))
        account_id = account.payload.receiver_account_id
        print(f"account_id: {account_id}")
        expect("confirm account", sandbox_confirm_account.sync_detailed(
            client=client,
            body=AccountHelperBody(receiver_account_id=account_id, confirm_status="confirmed"),
        ))

        reference = f"invoice-{uuid.uuid4().hex[:12]}"
        paid = expect("create payout", create_payout.sync_detailed(
            client=client,
            idempotency_key=reference,
            body=CreatePayoutBody(
                receiver_id=receiver_id,
                account_id=account_id,
                amount=10000,
                currency=AssetInput.AUD,
                reference=reference,
            ),
        ))
        payout_id = paid.payload.payout_id
        print(f"payout_id: {payout_id}")
        payout = expect("get payout", get_payout.sync_detailed(payout_id, client=client)).payload
        print(f"payout: {payout.status} {payout.amount} {payout.asset} {payout.reference}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
