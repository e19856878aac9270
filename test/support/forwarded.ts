import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import type { ForwardedEvent } from '../../src/forwarding/forwarded-event.js';
import type { HttpCall } from './downstream.js';

/** The published schema (docs/), compiled once: every forwarded event a test receives is held against it. */
const schema = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../docs/forwarded-event.schema.json'), 'utf8')) as object;
const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
const validate = ajv.compile<ForwardedEvent>(schema);

/** Two Standard Webhooks secrets, as FORWARD_SECRET lists them during a rotation. */
export const FORWARD_SECRETS = ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', `whsec_${Buffer.alloc(32, 0x5a).toString('base64')}`] as const;

/**
 * A delivery as a receiving service sees it: verified by the `standardwebhooks` package (an
 * implementation of the specification that shares no code with ours), with each secret on its own,
 * and valid against the published schema. Returns the event.
 */
export function verifiedForwardedEvent(call: HttpCall, secrets: readonly string[] = FORWARD_SECRETS): ForwardedEvent {
  const headers = {
    'webhook-id': String(call.headers['webhook-id']),
    'webhook-timestamp': String(call.headers['webhook-timestamp']),
    'webhook-signature': String(call.headers['webhook-signature']),
  };
  for (const secret of secrets) new Webhook(secret).verify(call.text, headers);
  const event = JSON.parse(call.text) as unknown;
  assert.ok(validate(event), `schema: ${ajv.errorsText(validate.errors)} in ${call.text}`);
  assert.equal(event.id, headers['webhook-id'], 'the body names its webhook-id');
  return event;
}
