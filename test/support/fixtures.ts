import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The provider fixtures in test/fixtures/providers (see payloads/README.md for their
 * provenance): the signature vectors produced by the official SDKs and the sample payloads.
 */
export const PROVIDERS_DIR = path.resolve(import.meta.dirname, '../fixtures/providers');
export const PAYLOADS_DIR = path.join(PROVIDERS_DIR, 'payloads');

interface VectorBase {
  name: string;
  /** Canonical header names as the providers document them (e.g. "Stripe-Signature"). */
  headers: Record<string, string>;
  rawBodyBase64: string;
  /** The official SDK's verdict. */
  expectedValid: boolean;
  idempotencyKey: string | null;
  note?: string;
}

export interface StripeVector extends VectorBase {
  provider: 'stripe';
  secret: string;
  secrets?: string[];
  now: number;
  toleranceSeconds: number;
}

export interface RazorpayVector extends VectorBase {
  provider: 'razorpay';
  secret: string;
}

export interface PayuVector extends VectorBase {
  provider: 'payu';
  key: string;
  salt: string;
}

export type SignatureVector = StripeVector | RazorpayVector | PayuVector;

export function loadVectors(): SignatureVector[] {
  const file = JSON.parse(readFileSync(path.join(PROVIDERS_DIR, 'vectors.json'), 'utf8')) as { vectors: SignatureVector[] };
  return file.vectors;
}

/** Header names lower-cased, as Node delivers them in `req.headers`. */
export function nodeHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

export function vectorBody(vector: SignatureVector): Buffer {
  return Buffer.from(vector.rawBodyBase64, 'base64');
}

/** A sample payload file's raw bytes, e.g. payload('payu', 'payment_success.form-urlencoded.txt'). */
export function payload(provider: string, file: string): Buffer {
  return readFileSync(path.join(PAYLOADS_DIR, provider, file));
}

export function payloadJson(provider: string, file: string): Record<string, unknown> {
  return JSON.parse(payload(provider, file).toString('utf8')) as Record<string, unknown>;
}

/** Every sample of a provider whose name ends with `suffix`, except the partial ones. */
export function samples(provider: 'stripe' | 'razorpay' | 'payu', suffix: string): Array<{ name: string; text: string }> {
  const dir = path.join(PAYLOADS_DIR, provider);
  return readdirSync(dir)
    .filter((name) => name.endsWith(suffix) && !name.includes('PARTIAL'))
    .sort()
    .map((name) => ({ name, text: readFileSync(path.join(dir, name), 'utf8') }));
}
