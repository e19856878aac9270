import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { loadConfig } from '../../../src/config/load.js';
import type { Inbox } from '../../../src/inbox.js';
import { Service, type ServiceParts } from '../../../src/service/service.js';

/**
 * Each part of a service as a stand-in that notes when it is asked to stop and, a turn of the event
 * loop later, when it has: a step that began before the one ahead of it finished shows in the order.
 */
function recordedService(processing: 'inbox' | 'thread') {
  const seen: string[] = [];
  const stopping = (name: string) => async () => {
    seen.push(name);
    await nextTurn();
    seen.push(`${name} done`);
  };
  const started: string[] = [];
  const inbox = {
    logger: pino({ level: 'silent' }),
    start: () => void started.push('inbox workers'),
    stopWorkers: stopping('inbox workers'),
    closeQueue: stopping('queue'),
    store: { close: stopping('store') },
  } as unknown as Inbox;
  const parts: ServiceParts = {
    config: loadConfig({ DATABASE_URL: 'sqlite:/nowhere/never-opened.db' }),
    inbox,
    webhooks: { close: stopping('webhook listener') } as unknown as FastifyInstance,
    management: { close: stopping('management listener') } as unknown as FastifyInstance,
    processing: processing === 'inbox' ? 'inbox' : { start: () => void started.push('thread'), stop: stopping('thread') },
    schedule: () => {
      started.push('scheduled jobs');
      return { stop: stopping('scheduled jobs') };
    },
    bulkReplays: { stop: stopping('bulk replays') },
    statistics: { start: () => void started.push('delivery counts'), stop: stopping('delivery counts') },
  };
  return { service: new Service(parts), seen, started };
}

test('a service stops its parts in one order, each step once the one before has finished', async () => {
  const { service, seen, started } = recordedService('thread');
  service.start();
  assert.deepEqual(started, ['thread', 'scheduled jobs', 'delivery counts'], 'the inbox workers stay idle: the thread processes');
  await service.stop(1000);
  assert.deepEqual(seen, [
    'webhook listener',
    'webhook listener done',
    'management listener',
    'management listener done',
    'scheduled jobs',
    'bulk replays',
    'scheduled jobs done',
    'bulk replays done',
    // The inbox's own workers stop too: a library's caller may have started them.
    'thread',
    'inbox workers',
    'thread done',
    'inbox workers done',
    'delivery counts',
    'delivery counts done',
    'queue',
    'queue done',
    'store',
    'store done',
  ]);
});

test('stopping again waits for the same stop, and a webhook server that closed itself is not closed again', async () => {
  const { service, seen, started } = recordedService('inbox');
  service.start();
  assert.deepEqual(started, ['inbox workers', 'scheduled jobs', 'delivery counts']);
  // What a createApp server's onClose hook runs once its own close has stopped the webhooks.
  const behind = service.stopBehindWebhooks(1000);
  await Promise.all([behind, service.stop(1000), service.stop(1000)]);
  assert.equal(seen.filter((step) => step === 'store').length, 1, 'each step ran once');
  assert.equal(seen[0], 'management listener');
  assert.ok(seen.includes('webhook listener done'), 'stop() closes the webhook listener itself');
});
