/**
 * Environment variables that belong to someone else: the system's, Node's and npm's, proxies',
 * systemd's, Kubernetes service links, and this project's own test and benchmark switches. They
 * never count as misspellings of ours, however close they come. Names are compared upper-cased, so
 * `http_proxy` is covered by `HTTP_PROXY`.
 */
const STANDARD_NAMES = new Set([
  // POSIX and the login environment
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'PWD',
  'OLDPWD',
  'TERM',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'HOSTNAME',
  'SHLVL',
  '_',
  'MAIL',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'COLORTERM',
  'FORCE_COLOR',
  'NO_COLOR',
  'CI',
  'DEBUG',
  // proxies, honoured by many clients
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'FTP_PROXY',
  // libuv and OpenSSL, which Node reads
  'UV_THREADPOOL_SIZE',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'OPENSSL_CONF',
  // systemd, for the service it starts
  'INVOCATION_ID',
  'JOURNAL_STREAM',
  'NOTIFY_SOCKET',
  'LISTEN_FDS',
  'LISTEN_PID',
  'LISTEN_FDNAMES',
  'MAINPID',
  'WATCHDOG_PID',
  'WATCHDOG_USEC',
  'SYSTEMD_EXEC_PID',
  'RUNTIME_DIRECTORY',
  'STATE_DIRECTORY',
  'CACHE_DIRECTORY',
  'LOGS_DIRECTORY',
  'CONFIGURATION_DIRECTORY',
  'CREDENTIALS_DIRECTORY',
  // this project's tests
  'REQUIRE_SERVICES',
  'ADMIN_SCREENSHOTS',
]);

/**
 * Families of variables that are someone else's, this project's test and benchmark switches among
 * them. AWS_ is the AWS SDK's (credentials, profiles, its own switches): AWS_REGION is read here too,
 * but the rest of the family configures the SDK, not a misspelt setting of ours.
 */
const STANDARD_PREFIXES = ['NODE_', 'NPM_', 'LC_', 'XDG_', 'SSH_', 'DBUS_', 'KUBERNETES_', 'AWS_', 'TEST_', 'BENCH_', 'CHAOS_'];

/**
 * Kubernetes (and Docker links) describe each service to every pod: `REDIS_SERVICE_HOST`,
 * `REDIS_SERVICE_PORT[_<name>]`, `REDIS_PORT_6379_TCP[_ADDR|_PORT|_PROTO]`, and `REDIS_PORT` holding
 * `tcp://10.0.0.11:6379`. A `REDIS_PORT` set by hand to a number is not one of them.
 */
const SERVICE_LINK = /_SERVICE_HOST$|_SERVICE_PORT(?:_\w+)?$|_PORT_\d+_(?:TCP|UDP|SCTP)(?:_(?:ADDR|PORT|PROTO))?$/;
const SERVICE_LINK_ADDRESS = /^(?:tcp|udp|sctp):\/\//;

/** Whether a variable is someone else's to judge; `value` tells a service link's `*_PORT` from one set by hand. */
export function isForeignVariable(name: string, value: string): boolean {
  const upper = name.toUpperCase();
  if (STANDARD_NAMES.has(upper) || STANDARD_PREFIXES.some((prefix) => upper.startsWith(prefix))) return true;
  return SERVICE_LINK.test(upper) || (upper.endsWith('_PORT') && SERVICE_LINK_ADDRESS.test(value));
}
