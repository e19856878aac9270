import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/settings.js';
import { describeError } from '../errors.js';

/** A service's listeners: the webhook one (none in `webhook-inbox worker`) and the management one (MANAGEMENT_PORT). */
export interface Listeners {
  webhooks: FastifyInstance | null;
  management: FastifyInstance | null;
}

/**
 * Starts `listeners` on the addresses `config` gives them. The start log names each, and says once
 * when the management routes share the public port. A listener that cannot start is an error naming
 * its variables; the caller stops what did start.
 */
export async function listen(config: Config, { webhooks, management }: Listeners, logger: Logger): Promise<void> {
  const listening = webhooks ? await listenOn(webhooks, config, { host: 'HOST', port: 'PORT' }) : null;
  const managed = management && config.management ? await listenOn(management, config.management, { host: 'MANAGEMENT_HOST', port: 'MANAGEMENT_PORT' }) : null;
  if (!listening) {
    if (managed) logger.info({ management: managed }, `listening on ${managed} (management): /healthz, /readyz and /metrics`);
  } else if (managed) {
    logger.info(
      { webhooks: listening, management: managed },
      `listening on ${listening}: /webhooks/* and /healthz; management on ${managed}: /healthz, /readyz, /metrics and /admin`,
    );
  } else {
    logger.warn(
      `MANAGEMENT_PORT is not set: /metrics, /readyz and /admin share the public port ${listening} with the webhooks; set MANAGEMENT_PORT to serve them on a port of their own (docs/operations.md#the-management-port)`,
    );
    logger.info({ webhooks: listening }, `listening on ${listening}: /webhooks/*, /healthz, /readyz, /metrics and /admin`);
  }
}

async function listenOn(server: FastifyInstance, { host, port }: { host: string; port: number }, variables: { host: string; port: string }): Promise<string> {
  try {
    await server.listen({ host, port });
  } catch (error) {
    throw new Error(`cannot listen on ${variables.host} ${host}, ${variables.port} ${port}: ${describeError(error)}`, { cause: error });
  }
  // The address bound, as set (0.0.0.0 is every interface) and with the port chosen for 0.
  const { address, family, port: bound } = server.server.address() as AddressInfo;
  return `http://${family === 'IPv6' ? `[${address}]` : address}:${bound}`;
}
