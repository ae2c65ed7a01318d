#!/bin/sh
# Signed requests to payoutd from a POSIX shell with openssl and curl.
#
# Makes a v1-signed GET of your subaccount, then a v2-signed POST that creates a receiver with an
# idempotency key, sent twice as a client retrying after a lost answer would: the second answer is
# the first one replayed (`idempotent-replayed: true`), never a second receiver.
# docs/API.md, "Authentication", is the reference.
#
#   PAYOUTD_URL=http://127.0.0.1:8080 PAYOUTD_API_KEY=pk_... PAYOUTD_API_SECRET=sk_... \
#   PAYOUTD_SUBACCOUNT=<subaccount id> sh sign.sh
#
# Exits 0 when every answer was the expected one, 1 otherwise (saying which), 2 when a variable
# is missing. The secret is passed to openssl on its command line, where other users of the
# machine can see it (ps): fine on your own machine, not on a shared one.
set -eu

for name in PAYOUTD_API_KEY PAYOUTD_API_SECRET PAYOUTD_SUBACCOUNT; do
    eval "value=\${$name:-}"
    if [ -z "$value" ]; then
        echo "set $name (see the top of this file)" >&2
        exit 2
    fi
done
base=${PAYOUTD_URL:-http://127.0.0.1:8080}
base=${base%/}
key=$PAYOUTD_API_KEY
sub=$PAYOUTD_SUBACCOUNT
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Unix time in milliseconds, increasing within this script: POST nonces are single-use, so two
# requests in one millisecond still get their own. (`%3N` is GNU date's; elsewhere the
# milliseconds are the seconds' first.)
last_nonce=0
next_nonce() {
    now=$(date +%s%3N)
    case $now in *[!0-9]*) now=$(($(date +%s) * 1000)) ;; esac
    [ "$now" -gt "$last_nonce" ] || now=$((last_nonce + 1))
    last_nonce=$now
}

# The lower-case hex HMAC-SHA256 of stdin keyed with the API secret.
hmac_hex() {
    openssl dgst -sha256 -hmac "$PAYOUTD_API_SECRET" | sed 's/^.*= //'
}

# call METHOD PATH VERSION [BODY [IDEMPOTENCY_KEY]]: prints the status; the answer's headers and
# body are left in $work/headers and $work/body.
call() {
    method=$1 path=$2 version=$3 body=${4:-} idem=${5:-}
    next_nonce
    if [ "$version" = 1 ]; then
        signature=$last_nonce.$(printf '%s' "$last_nonce.$key" | hmac_hex)
        set -- -H "signature: $signature"
    else
        body_hash=$(printf '%s' "$body" | openssl dgst -sha256 | sed 's/^.*= //')
        signature=$last_nonce.$(printf '%s' "$last_nonce.$key.$method.$path.$body_hash" | hmac_hex)
        set -- -H "x-signature-version: 2" -H "signature: $signature"
    fi
    if [ -n "$body" ]; then
        set -- "$@" -H "content-type: application/json" --data-binary "$body"
    fi
    if [ -n "$idem" ]; then
        set -- "$@" -H "idempotency-key: $idem"
    fi
    curl -sS -X "$method" -H "x-api-key: $key" "$@" \
        -D "$work/headers" -o "$work/body" -w '%{http_code}' "$base$path"
}

status=$(call GET "/api/subaccount/$sub" 1)
echo "GET /api/subaccount/$sub (v1): $status"
if [ "$status" != 200 ]; then
    echo "unexpected answer: $(cat "$work/body")" >&2
    exit 1
fi

email=ada.$(openssl rand -hex 6)@example.com
receiver='{"subaccount_id":"'$sub'","first_name":"Ada","last_name":"Lovelace","email":"'$email'","dob":"1990-12-10","dialcode":"61","phone":"412345678","address":"1 Example Street","city":"Sydney","state":"NSW","postcode":"2000","country":"AUS"}'
idem=$(openssl rand -hex 16)
ids=
for attempt in first retry; do
    # The retry is the same request with the same key (a new nonce and signature, as every POST
    # needs).
    status=$(call POST /api/receiver 2 "$receiver" "$idem")
    replayed=$(tr -d '\r' < "$work/headers" | sed -n 's/^[Ii]dempotent-[Rr]eplayed: *//p')
    echo "POST /api/receiver (v2, $attempt): $status, idempotent-replayed: ${replayed:-false}"
    if [ "$status" != 200 ]; then
        echo "unexpected answer: $(cat "$work/body")" >&2
        exit 1
    fi
    ids="$ids $(sed -n 's/.*"receiver_id":"\([^"]*\)".*/\1/p' "$work/body")"
done
set -- $ids
if [ "$#" -ne 2 ] || [ "$1" != "$2" ] || [ "$replayed" != true ]; then
    echo "the retry was not the first answer replayed:$ids" >&2
    exit 1
fi
echo "receiver_id: $1"
