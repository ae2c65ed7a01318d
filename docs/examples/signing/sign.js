#!/usr/bin/env node
// Signed requests to payoutd with Node (18 or newer) and no dependencies: `crypto` and `fetch`.
//
// Makes a v1-signed GET of your subaccount, then a v2-signed POST that creates a receiver with an
// idempotency key, sent twice as a client retrying after a lost answer would: the second answer is
// the first one replayed (`idempotent-replayed: true`), never a second receiver.
// docs/API.md, "Authentication", is the reference.
//
//   PAYOUTD_URL=http://127.0.0.1:8080 PAYOUTD_API_KEY=pk_... PAYOUTD_API_SECRET=sk_... \
//   PAYOUTD_SUBACCOUNT=<subaccount id> node sign.js
//
// Exits 0 when every answer was the expected one, 1 otherwise (saying which), 2 when a variable
// is missing.
'use strict';

const crypto = require('node:crypto');

let lastNonce = 0;

// Unix time in milliseconds, increasing within this process: POST nonces are single-use, so two
// requests in one millisecond still get their own.
function nextNonce() {
  lastNonce = Math.max(Date.now(), lastNonce + 1);
  return String(lastNonce);
}

// `signature` of v1: HMAC-SHA256 of `<nonce>.<api key>`.
function signV1(apiKey, apiSecret, nonce) {
  const mac = crypto.createHmac('sha256', apiSecret).update(`${nonce}.${apiKey}`).digest('hex');
  return `${nonce}.${mac}`;
}

// `signature` of v2: HMAC-SHA256 of `<nonce>.<api key>.<METHOD>.<path with query>.<hex SHA-256
// of the raw body>`; send `x-signature-version: 2` with it.
function signV2(apiKey, apiSecret, nonce, method, path, body) {
  const bodyHash = crypto.createHash('sha256').update(body).digest('hex');
  const message = `${nonce}.${apiKey}.${method.toUpperCase()}.${path}.${bodyHash}`;
  const mac = crypto.createHmac('sha256', apiSecret).update(message).digest('hex');
  return `${nonce}.${mac}`;
}

// Sends one signed request; resolves to { status, headers, json } (json null when not JSON).
async function call(base, apiKey, apiSecret, method, path, { body, version = 2, idempotencyKey } = {}) {
  const raw = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body));
  const nonce = nextNonce();
  const headers = { 'x-api-key': apiKey };
  if (version === 1) {
    headers.signature = signV1(apiKey, apiSecret, nonce);
  } else {
    headers['x-signature-version'] = '2';
    headers.signature = signV2(apiKey, apiSecret, nonce, method, path, raw);
  }
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  const response = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : raw,
  });
  const text = await response.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: a bare 400 from the HTTP parser, say
  }
  return { status: response.status, headers: response.headers, json };
}

async function main() {
  const base = (process.env.PAYOUTD_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const apiKey = process.env.PAYOUTD_API_KEY;
  const apiSecret = process.env.PAYOUTD_API_SECRET;
  const subaccount = process.env.PAYOUTD_SUBACCOUNT;
  for (const [name, value] of [['PAYOUTD_API_KEY', apiKey], ['PAYOUTD_API_SECRET', apiSecret], ['PAYOUTD_SUBACCOUNT', subaccount]]) {
    if (!value) {
      console.error(`set ${name} (see the top of this file)`);
      return 2;
    }
  }

  const got = await call(base, apiKey, apiSecret, 'GET', `/api/subaccount/${subaccount}`, { version: 1 });
  console.log(`GET /api/subaccount/${subaccount} (v1): ${got.status}`);
  if (got.status !== 200) {
    console.error(`unexpected answer: ${JSON.stringify(got.json)}`);
    return 1;
  }

  const receiver = {
    subaccount_id: subaccount,
    first_name: 'Ada',
    last_name: 'Lovelace',
    email: `ada.${crypto.randomBytes(6).toString('hex')}@example.com`,
    dob: '1990-12-10',
    dialcode: '61',
    phone: '412345678',
    address: '1 Example Street',
    city: 'Sydney',
    state: 'NSW',
    postcode: '2000',
    country: 'AUS',
  };
  const idempotencyKey = crypto.randomUUID();
  const first = await call(base, apiKey, apiSecret, 'POST', '/api/receiver', { body: receiver, idempotencyKey });
  // The same request again with the same key (a new nonce and signature, as every POST needs).
  const again = await call(base, apiKey, apiSecret, 'POST', '/api/receiver', { body: receiver, idempotencyKey });
  for (const [label, answer] of [['first', first], ['retry', again]]) {
    const replayed = answer.headers.get('idempotent-replayed') || 'false';
    console.log(`POST /api/receiver (v2, ${label}): ${answer.status}, idempotent-replayed: ${replayed}`);
    if (answer.status !== 200) {
      console.error(`unexpected answer: ${JSON.stringify(answer.json)}`);
      return 1;
    }
  }
  const ids = [first.json.payload.receiver_id, again.json.payload.receiver_id];
  if (ids[0] !== ids[1] || again.headers.get('idempotent-replayed') !== 'true') {
    console.error(`the retry was not the first answer replayed: ${ids}`);
    return 1;
  }
  console.log(`receiver_id: ${ids[0]}`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
