import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/** Headers that authenticate a delivery or a caller: whatever logs a request must not show them. */
const SECRET_HEADERS = ['authorization', 'cookie', 'stripe-signature', 'x-razorpay-signature'];

/**
 * Redacted wherever they appear in a log object (DESIGN.md invariant 6). Payloads carry customer
 * details and PayU's hash; a driver error's `sql` carries the values of the failed statement.
 */
export const REDACTED_PATHS = [
  ...SECRET_HEADERS.flatMap((name) => [`req.headers["${name}"]`, `headers["${name}"]`, `*.headers["${name}"]`]),
  'payload',
  '*.payload',
  'parsedPayload',
  '*.parsedPayload',
  'body',
  '*.body',
  'err.sql',
  'err.cause.sql',
];

/**
 * JSON lines for machines; readable lines (pino-pretty, in a worker thread) when a person watches the
 * terminal. A `destination` (tests, embedding services) always gets JSON.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (destination) return pino(options, destination);
  if (process.stdout.isTTY) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } });
  }
  return pino(options);
}
