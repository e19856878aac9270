import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { InboxServers } from '../app.js';
import type { Config, ManagementSettings } from '../config/settings.js';
import { describeError } from '../errors.js';

/**
 * `serve`'s listeners: the webhook port, and the management port when MANAGEMENT_PORT is set. The
 * start log names each, and says once when the management routes share the public port. A listener
 * that cannot start is an error naming its variables; the caller closes what did start.
 */
export async function listenServers(config: Config, { app, management }: InboxServers, logger: Logger): Promise<void> {
  const webhooks = await listenOn(app, config.host, config.port, 'HOST', 'PORT');
  if (!management || !config.management) {
    logger.warn(
      `MANAGEMENT_PORT is not set: /metrics, /readyz and /admin share the public port ${webhooks} with the webhooks; set MANAGEMENT_PORT to serve them on a port of their own (docs/operations.md#the-management-port)`,
    );
    logger.info({ webhooks }, `listening on ${webhooks}: /webhooks/*, /healthz, /readyz, /metrics and /admin`);
    return;
  }
  const managed = await listenManagement(management, config.management);
  logger.info({ webhooks, management: managed }, `listening on ${webhooks}: /webhooks/* and /healthz; management on ${managed}: /healthz, /readyz, /metrics and /admin`);
}

/** `worker`'s management listener, when MANAGEMENT_PORT is set: probes and metrics, no webhooks. */
export async function listenManagement(management: FastifyInstance, { host, port }: ManagementSettings): Promise<string> {
  return listenOn(management, host, port, 'MANAGEMENT_HOST', 'MANAGEMENT_PORT');
}

async function listenOn(server: FastifyInstance, host: string, port: number, hostVariable: string, portVariable: string): Promise<string> {
  try {
    await server.listen({ host, port });
  } catch (error) {
    throw new Error(`cannot listen on ${hostVariable} ${host}, ${portVariable} ${port}: ${describeError(error)}`, { cause: error });
  }
  // The address bound, as set (0.0.0.0 is every interface) and with the port chosen for 0.
  const { address, family, port: bound } = server.server.address() as AddressInfo;
  return `http://${family === 'IPv6' ? `[${address}]` : address}:${bound}`;
}
