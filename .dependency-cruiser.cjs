/**
 * The layering of src/, checked in CI (`npm run lint:deps`). Each layer may import from the layers
 * below it and from itself, never from a layer above; nothing may import in a circle. A new folder
 * goes into the layer it belongs to, so the rules keep describing the whole tree.
 */
const LAYERS = [
  ['src/errors.ts', 'src/clock.ts', 'src/supported-node.ts', 'src/model/'], // what everything shares: errors, time, the Node version check, the shapes the pipeline carries
  ['src/config/'], // settings, read and validated from the environment
  ['src/db/'], // what every table shares: schema, migrations, backends, group commit, leases
  ['src/store/'], // the inbox's own operations, the one writer of event state: record, claim, complete, payment leases, a replay's reset, archive and restore; filters as SQL
  ['src/providers/'], // verify and read each provider's deliveries
  ['src/domain/'], // payments: forward-only states, the handlers' contract
  ['src/observability/', 'src/queue/'], // metrics, logs, readiness; how ids reach the workers
  ['src/processing/'], // claim, apply, complete: the workers
  ['src/outbox/'], // side effects after commit
  ['src/extension/'], // what a business domain brings: settings, tables, handlers, transports, what the screens show of it
  ['src/inbox.ts'], // the pipeline: verify, record, acknowledge, process
  ['src/ops/'], // operator jobs: replay, stuck, archive, simulator
  ['src/admin/'], // the operator dashboard's logic: access, what its screens read, audited actions, overview figures
  ['src/http/'], // fastify routes
  ['src/course-platform/', 'src/forwarding/'], // the domains that ship: the reference business, forwarding to your own service
  ['src/app.ts', 'src/service/'], // the composition root, and the service: its parts started and stopped in one order, its listeners, the workers' thread, the domains it runs
  ['src/cli/', 'src/index.ts'], // the command line and the library surface
];

/**
 * The engine knows payments, not any business: no engine folder imports a domain, whatever the
 * layers allow. The domains are the folders that ship one; everything else under src/ but the
 * places that choose which domains run (the composition root, the library surface, the command
 * line's wiring) is the engine.
 */
const DOMAINS = ['src/course-platform/', 'src/forwarding/'];
const COMPOSITION = ['src/app.ts', 'src/service/', 'src/index.ts', 'src/cli/'];

const escapeRegExp = (path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const pattern = (paths) => `^(${paths.map((p) => escapeRegExp(p) + (p.endsWith('/') ? '' : '$')).join('|')})`;

const layerRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${index}-imports-down`,
  comment: `${layer.join(', ')} may not import from the layers above it`,
  severity: 'error',
  from: { path: pattern(layer) },
  to: { path: pattern(LAYERS.slice(index + 1).flat()) },
}));

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'no import cycles', from: {}, to: { circular: true } },
    {
      name: 'src-not-to-tests-or-tools',
      severity: 'error',
      comment: 'the product never imports its tests, bench or chaos suite',
      from: { path: '^src/' },
      to: { path: '^(test|bench|chaos)/' },
    },
    {
      name: 'every-src-file-in-a-layer',
      severity: 'error',
      comment: 'a file outside every layer would escape the rules: add its folder to LAYERS',
      from: { path: '^src/', pathNot: pattern(LAYERS.flat()) },
      to: {},
    },
    {
      name: 'databases-behind-the-backend',
      severity: 'error',
      comment: "a database's own code (db/mysql, db/postgres, db/sqlite) is reached through its StoreBackend: only db/ imports it",
      from: { path: '^src/', pathNot: '^src/db/' },
      to: { path: '^src/db/(mysql|postgres|sqlite)/' },
    },
    {
      name: 'engine-not-to-domains',
      severity: 'error',
      comment: 'an engine folder never imports a domain: a domain says what the engine must know through the hooks of extension/payment-domain.ts',
      from: { path: '^src/', pathNot: pattern([...DOMAINS, ...COMPOSITION]) },
      to: { path: pattern(DOMAINS) },
    },
    {
      name: 'domain-not-to-other-domains',
      severity: 'error',
      comment: 'each domain stands alone: an application runs any of them without the others',
      from: { path: '^src/(course-platform|forwarding)/' },
      to: { path: '^src/(course-platform|forwarding)/', pathNot: '^src/$1/' },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
  },
};
