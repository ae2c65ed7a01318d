#!/usr/bin/env node
// Verifies a payoutd webhook delivery (Standard Webhooks, v1 signatures).
//
// Node's built-in crypto only. Call verify() from your HTTP handler with the headers and the raw
// body Buffer (e.g. express.raw({ type: "application/json" })), or run this file:
//
//     node verify.js SECRET WEBHOOK_ID WEBHOOK_TIMESTAMP WEBHOOK_SIGNATURE [BODY_FILE] < body
//
// It exits 0 when the delivery is genuine and 1 when it is not.
"use strict";

const crypto = require("node:crypto");

const TOLERANCE_SECS = 5 * 60; // how far webhook-timestamp may be from our clock (replay protection)

class Rejected extends Error {} // the message says why: "timestamp" or "signature"

/** Throws Rejected unless one of the "v1," signatures signs this id, timestamp and raw body. */
function verify(secret, id, timestamp, signatures, body) {
  if (!/^[0-9]+$/.test(timestamp)) throw new Rejected("timestamp");
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECS) {
    throw new Rejected("timestamp");
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = Buffer.from(
    crypto.createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64"),
  );
  // During a secret rotation there are several signatures: any one will do.
  for (const entry of signatures.split(" ")) {
    if (!entry.startsWith("v1,")) continue;
    const candidate = Buffer.from(entry.slice(3));
    if (candidate.length === expected.length && crypto.timingSafeEqual(candidate, expected)) {
      return;
    }
  }
  throw new Rejected("signature");
}

module.exports = { verify, Rejected };

if (require.main === module) {
  const fs = require("node:fs");
  const args = process.argv.slice(2);
  if (args.length !== 4 && args.length !== 5) {
    console.error("usage: node verify.js SECRET WEBHOOK_ID WEBHOOK_TIMESTAMP WEBHOOK_SIGNATURE [BODY_FILE] < body");
    process.exit(2);
  }
  const [secret, id, timestamp, signatures, bodyFile] = args;
  const body = fs.readFileSync(bodyFile ?? 0); // 0 is stdin; a Buffer, never re-serialised
  try {
    verify(secret, id, timestamp, signatures, body);
  } catch (error) {
    if (!(error instanceof Rejected)) throw error;
    console.error(`rejected: ${error.message}`);
    process.exit(1);
  }
}
