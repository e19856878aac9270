import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { stripeDelivery, stripePaymentEvent, TEST_SECRETS } from '../support/signing.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/**
 * The first container engine that answers (`docker info`, `podman info`), or why none did. The image
 * test needs one, and no test service provides it: where there is none, the test says so and is
 * skipped, under REQUIRE_SERVICES too.
 */
async function containerEngine(): Promise<{ engine: string } | { none: string }> {
  const reasons: string[] = [];
  for (const engine of ['docker', 'podman']) {
    try {
      await run(engine, ['info'], { timeout: 20_000 });
      return { engine };
    } catch (error) {
      const { code, stderr } = error as { code?: string | number; stderr?: string };
      reasons.push(`${engine}: ${code === 'ENOENT' ? 'not installed' : (stderr?.trim().split('\n').pop() ?? String(code))}`);
    }
  }
  return { none: `no container engine runs on this machine (${reasons.join('; ')}); the image was neither built nor run` };
}

const found = await containerEngine();

describe('the container image', () => {
  test('the Dockerfile builds in one stage and runs the compiled service from another, as an unprivileged user, checked on /healthz', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const stages = dockerfile.match(/^FROM /gm) ?? [];
    assert.ok(stages.length >= 2, 'multi-stage');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    assert.match(runtime, /^USER node$/m, 'the runtime stage drops root');
    assert.match(runtime, /^HEALTHCHECK .*\n?.*\/healthz/m);
    assert.match(runtime, /^CMD \["node", "bin\/webhook-inbox\.js", "serve"\]$/m, 'plain node on the compiled bin');
    assert.doesNotMatch(runtime, /COPY[^\n]*\bsrc\b|tsx/, 'no sources and no TypeScript runtime in the image');
  });

  test('built and run: healthy, not root, and it records a signed delivery', { skip: 'none' in found ? found.none : false, timeout: 15 * 60_000 }, async () => {
    const engine = (found as { engine: string }).engine;
    const tag = `webhook-inbox:test-${randomBytes(4).toString('hex')}`;
    await run(engine, ['build', '-t', tag, ROOT], { maxBuffer: 64 * 1024 * 1024, timeout: 10 * 60_000 });
    const { stdout: id } = await run(engine, ['run', '-d', '-p', '127.0.0.1::3000', '-e', `STRIPE_WEBHOOK_SECRET=${TEST_SECRETS.stripe}`, tag]);
    const container = id.trim();
    try {
      const { stdout: port } = await run(engine, ['port', container, '3000/tcp']);
      const url = `http://${port.trim().split('\n')[0]}`;
      let health = '';
      for (let waited = 0; waited < 120 && health !== 'healthy'; waited++) {
        await sleep(1000);
        health = (await run(engine, ['inspect', '--format', '{{.State.Health.Status}}', container])).stdout.trim();
      }
      assert.equal(health, 'healthy');
      assert.notEqual((await run(engine, ['exec', container, 'id', '-u'])).stdout.trim(), '0');
      const delivery = stripeDelivery(stripePaymentEvent('evt_image_1', 'payment_intent.succeeded', 'pi_image_1'));
      const response = await fetch(`${url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
      assert.equal(response.status, 200);
    } finally {
      await run(engine, ['rm', '-f', container]).catch(() => undefined);
      await run(engine, ['rmi', '-f', tag]).catch(() => undefined);
    }
  });
});
