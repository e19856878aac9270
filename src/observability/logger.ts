import { isMainThread } from 'node:worker_threads';
import { pino, stdSerializers, type Bindings, type ChildLoggerOptions, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { describeError } from '../errors.js';
import { isRecord } from '../model/json.js';
import { isSecretName } from '../model/secrets.js';

const CENSOR = '[redacted]';

/**
 * Fields never logged, wherever they appear in a log object (docs/design.md, invariant 6). Payloads carry
 * customer details and PayU's hash; a driver error's `sql` carries the values of the failed statement.
 */
const SECRET_FIELDS = ['payload', 'parsedPayload', 'body', 'sql'];

type Fields = Record<string, unknown>;

/** A shallow copy that keeps the prototype, so a serialized error still prints as one. */
const copyOf = (value: Fields): Fields => Object.assign(Object.create(Object.getPrototypeOf(value) as object | null) as Fields, value);

/** Headers that authenticate a delivery or a caller (isSecretName): whatever logs a request must not show them. */
function withoutSecretHeaders(headers: Fields): Fields {
  const secret = Object.keys(headers).filter(isSecretName);
  if (secret.length === 0) return headers;
  const censored = copyOf(headers);
  for (const name of secret) censored[name] = CENSOR;
  return censored;
}

/** `value` itself when it holds no secret field or header, otherwise a copy with them censored. */
function withoutSecrets(value: Fields): Fields {
  let copy: Fields | undefined;
  for (const name of SECRET_FIELDS) if (Object.hasOwn(value, name)) (copy ??= copyOf(value))[name] = CENSOR;
  if (isRecord(value.headers)) {
    const headers = withoutSecretHeaders(value.headers);
    if (headers !== value.headers) (copy ??= copyOf(value)).headers = headers;
  }
  return copy ?? value;
}

/**
 * Secrets one level down in a log object (`{ event: { headers } }`), copying only what changes, never
 * the caller's object. The top level is censored by serializers, which pino also runs on child
 * bindings, and `err` by its serializer once pino has copied the error's own fields.
 *
 * pino's own `redact` with wildcard paths runs on every field of every line and parses its paths on
 * each call, an order of magnitude more per line than this walk, which costs next to nothing on a
 * line without secrets.
 */
function censorNested(object: Fields): Fields {
  let result = object;
  for (const key in object) {
    const value = object[key];
    if (key === 'err' || !isRecord(value)) continue;
    const censored = withoutSecrets(value);
    if (censored === value) continue;
    if (result === object) result = copyOf(object);
    result[key] = censored;
  }
  return result;
}

/** The serializer of a secret field: its value never reaches the line. */
const hidden = () => CENSOR;

/**
 * Lines wait in a buffer until this much has gathered, or LOG_WRITE_INTERVAL_MS has passed, and go to
 * stdout in one write: each write costs a system call (in the main thread also its hand-off to a libuv
 * thread), and a saturated service writes a line per delivery (bench/HISTORY.md, "Log lines in
 * blocks").
 */
const LOG_BLOCK_BYTES = 4096;
const LOG_WRITE_INTERVAL_MS = 100;

/**
 * What stdout may hold unwritten, when whatever reads it stops: lines beyond it are dropped. A log
 * reader that stalls must not stop the service from answering deliveries; the database, not the
 * log, is the record of what was received.
 */
const UNWRITTEN_LOG_BYTES = 32 * 1024 * 1024;

/**
 * JSON lines for machines; readable lines (pino-pretty, in a worker thread) when a person watches the
 * terminal. A `destination` (tests, embedding services) always gets JSON.
 *
 * stdout is written in blocks of up to 4 KB, at least every 100 ms: asynchronously in the main
 * thread, where pino writes what is left when the process exits; synchronously in a worker thread,
 * which pino does not flush at its end, so that `flushed` (awaited before the thread ends itself)
 * finds no write under way and writes the rest.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    formatters: { log: censorNested },
    serializers: {
      ...Object.fromEntries(SECRET_FIELDS.map((name) => [name, hidden])),
      headers: (headers: unknown) => (isRecord(headers) ? withoutSecretHeaders(headers) : headers),
      err: (error: Error) => {
        const serialized: unknown = stdSerializers.err(error);
        if (!isRecord(serialized)) return serialized;
        // The causes' messages as everywhere else (pino's own repeats one the message already says).
        if (error instanceof Error) serialized.message = describeError(error);
        return withoutSecrets(serialized);
      },
    },
  };
  const pretty = { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } };
  const logger = destination
    ? pino(options, destination)
    : process.stdout.isTTY
      ? pino({ ...options, ...pretty })
      : pino(
          options,
          pino.destination({ dest: process.stdout.fd ?? 1, sync: !isMainThread, minLength: LOG_BLOCK_BYTES, periodicFlush: LOG_WRITE_INTERVAL_MS, maxLength: UNWRITTEN_LOG_BYTES }),
        );
  // Children inherit this (pino makes each one from its parent), so bindings at any depth pass through
  // here; pino gives children no formatter of their own to do it.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- applied below with each logger as its own `this`
  const child = logger.child;
  function censoredChild(this: Logger, bindings: Bindings, childOptions?: ChildLoggerOptions): Logger {
    return Reflect.apply(child, this, [censorNested(bindings), childOptions]);
  }
  // pino's child type is generic over custom levels, which this logger has none of.
  logger.child = censoredChild as unknown as Logger['child'];
  return logger;
}

/**
 * For a worker thread about to end itself: resolves once every line a `createLogger` logger was given
 * there has been written (its stream is synchronous there, so nothing is left under way). In the
 * main thread pino writes what is left when the process exits, and this resolves earlier, while the
 * last block may still be under way.
 */
export function flushed(logger: Logger): Promise<void> {
  return new Promise((resolve) => logger.flush(() => resolve()));
}
