// Types for payoutd's API from docs/openapi.json (docs/API.md, "Generated clients"):
//
//   npx openapi-typescript@7.13.0 docs/openapi.json -o payoutd.d.ts
//
// This file uses them as a merchant's code would, and is type-checked with `tsc --strict`
// by payoutd's tests: a request body, an answer read field by field, and a body the types
// must refuse.
import type { components, paths } from './payoutd';

type CreatePayoutBody = components['schemas']['CreatePayoutBody'];
type PayoutAnswer =
  paths['/api/payout/{id}']['get']['responses'][200]['content']['application/json'];
type Failure = components['schemas']['FailureEnvelope'];

export const payout: CreatePayoutBody = {
  receiver_id: '5f0c6a7e-8b9d-4c1e-a2f3-0d4b6e8a1c2f',
  account_id: '9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d',
  amount: 10000,
  currency: 'AUD',
  reference: 'invoice-1001',
};

export function describe(answer: PayoutAnswer): string {
  const { status, amount, asset, fee_data } = answer.payload;
  return `${status}: ${amount} ${asset} (fee ${fee_data.fee_value})`;
}

export function codes(failure: Failure): string[] {
  return failure.error.map((item) => item.code);
}

// @ts-expect-error: a currency is one of the document's assets.
export const unknownCurrency: CreatePayoutBody = { ...payout, currency: 'GBP' };
