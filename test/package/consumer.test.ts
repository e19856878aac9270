import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import semver from 'semver';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * A team's script over the installed package: an inbox with no domain, one with the course platform
 * from `webhook-inbox/course-platform` (its settings read by loadConfig), one with a domain of its own;
 * each migrated on a SQLite file of its own. Prints each schema's tables and the columns of payments.
 */
const DOMAINS_CHECK = `import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInbox, definePaymentDomain, loadConfig } from 'webhook-inbox';
import { coursePlatform, coursePlatformSettings } from 'webhook-inbox/course-platform';

const dir = await mkdtemp(path.join(tmpdir(), 'domains-check-'));
const example = definePaymentDomain({
  name: 'grants',
  migrations: {
    '0001_grants': {
      async up(db) {
        await db.schema.createTable('grants').addColumn('id', 'integer', (column) => column.primaryKey()).execute();
      },
    },
  },
});

/** @param {string} name @param {import('webhook-inbox').PaymentDomain[]} domains */
async function schemaOf(name, domains) {
  const env = { DATABASE_URL: 'sqlite:' + path.join(dir, name + '.db'), LOG_LEVEL: 'silent', FULFILLMENT_URL: 'https://fulfil.example/orders' };
  const inbox = createInbox(loadConfig(env, { domains }), { domains });
  try {
    await inbox.store.migrate();
    const tables = await inbox.database.introspection.getTables();
    const payments = tables.find((table) => table.name === 'payments');
    return { tables: tables.map((table) => table.name), payments: payments ? payments.columns.map((column) => column.name) : [] };
  } finally {
    await inbox.stop(0);
  }
}

const schemas = { none: await schemaOf('none', []), coursePlatform: await schemaOf('course-platform', [coursePlatform]), example: await schemaOf('example', [example]) };
const settings = coursePlatformSettings(loadConfig({ FULFILLMENT_URL: 'https://fulfil.example/orders' }, { domains: [coursePlatform] }));
console.log(JSON.stringify({ ...schemas, fulfilmentUrl: settings?.fulfilment?.url }));
await rm(dir, { recursive: true, force: true });
`;
const run = promisify(execFile);

interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: Array<{ path: string }>;
}

/** A package of `npm ls --all --json --long`, and what its package.json says. */
interface InstalledTree {
  /** None for an optional peer dependency that is not installed. */
  path?: string;
  dependencies?: Record<string, InstalledTree>;
}

interface InstalledPackage {
  name: string;
  version: string;
  engines?: { node?: string };
}

/** Runs a command in `cwd` to its end; resolves with its output, rejects with it (and the exit code). */
async function sh(cwd: string, command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, output };
}

async function succeeds(cwd: string, command: string, args: string[], env?: Record<string, string>): Promise<string> {
  const { code, output } = await sh(cwd, command, args, env);
  assert.equal(code, 0, `${command} ${args.join(' ')} exited ${code}:\n${output}`);
  return output;
}

/**
 * The package as a team gets it: packed, installed from the tarball into a new project outside the
 * repository, with no TypeScript sources, no tsx and no repository around it. Installed once; every
 * test below runs in that project. Needs the npm registry (the package's dependencies).
 */
describe('the packed package, installed into an empty project', () => {
  let work: string;
  let project: string;
  let packed: Packed;
  let installOutput: string;
  const timings: Record<string, number> = {};
  const timed = async <T>(name: string, step: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await step();
    } finally {
      timings[name] = Math.round(performance.now() - started);
    }
  };

  before(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'webhook-inbox-consumer-'));
    project = path.join(work, 'project');
    // `npm pack` runs `prepare`: the tarball holds what the sources compile to now.
    const { stdout } = await timed('pack', () => run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }));
    packed = (JSON.parse(stdout) as Packed[])[0]!;

    await cp(path.join(ROOT, 'examples'), project, { recursive: true, filter: (source) => !source.includes(`${path.sep}dist`) });
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'a-team-project', private: true, type: 'module' }, null, 2));
    // The examples' own dependencies, at the versions this repository develops them with.
    const { devDependencies } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const own = ['express', '@types/express', '@types/node', 'typescript'].map((name) => `${name}@${devDependencies[name]}`);
    // Install scripts off: the one dependency with a native part, better-sqlite3, would be compiled
    // again from source (no prebuilt binary is reachable here), minutes of work that tests npm, not
    // this package. Its addon, built by this repository's own install for the same Node, is copied in.
    installOutput = await timed('install', () =>
      succeeds(project, 'npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', path.join(work, packed.filename), ...own]),
    );
    await cp(path.join(ROOT, 'node_modules/better-sqlite3/build'), path.join(project, 'node_modules/better-sqlite3/build'), { recursive: true });
    // Beside the examples, so that their compile checks it too (the project's tsconfig takes *.mjs).
    await writeFile(path.join(project, 'domains-check.mjs'), DOMAINS_CHECK);
  });
  after(async () => {
    if (work) await rm(work, { recursive: true, force: true });
    console.log(`# consumer test timings (ms): ${JSON.stringify(timings)}; tarball ${packed?.size} bytes, ${packed?.unpackedSize} unpacked, ${packed?.files.length} files`);
  });

  test('the tarball holds the compiled package, its types and maps, the bin, the licence and the changelog; no sources or tests', () => {
    const files = packed.files.map((file) => file.path);
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/index.js.map',
      'dist/cli/main.js',
      'dist/course-platform/index.js',
      'dist/course-platform/index.d.ts',
      'bin/webhook-inbox.js',
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'package.json',
      'docs/forwarded-event.schema.json',
    ]) {
      assert.ok(files.includes(file), `${file} is packed`);
    }
    const stray = files.filter((file) => /^(src|test|bench|chaos|examples)\//.test(file) || (file.endsWith('.ts') && !file.endsWith('.d.ts')));
    assert.deepEqual(stray, []);
  });

  // A team's install reads our dependencies' ranges, never our overrides: what they resolve to must
  // run on every Node that package.json's engines admit, the oldest as much as this one.
  test("installing it warns of no dependency's engine (EBADENGINE), on this Node or the oldest it admits", async () => {
    assert.doesNotMatch(installOutput, /EBADENGINE|Unsupported engine/i, installOutput);

    const { engines } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    const oldest = semver.minVersion(engines.node)!.version;
    const { stdout } = await run('npm', ['ls', '--all', '--json', '--long'], { cwd: project, maxBuffer: 64 * 1024 * 1024 });
    const ours = (JSON.parse(stdout) as { dependencies: Record<string, InstalledTree> }).dependencies['webhook-inbox']!;
    const refusing: string[] = [];
    const visit = async (tree: InstalledTree) => {
      for (const dependency of Object.values(tree.dependencies ?? {})) {
        if (dependency.path === undefined) continue;
        const { name, version, engines: wanted } = JSON.parse(await readFile(path.join(dependency.path, 'package.json'), 'utf8')) as InstalledPackage;
        if (wanted?.node !== undefined && !semver.satisfies(oldest, wanted.node)) refusing.push(`${name}@${version} requires node ${wanted.node}`);
        await visit(dependency);
      }
    };
    await visit(ours);
    assert.deepEqual(refusing, [], `Node ${oldest} (package.json engines ${engines.node})`);
  });

  test('npx webhook-inbox --help runs the compiled CLI with plain node', async () => {
    const output = await timed('help', () => succeeds(project, 'npx', ['--no-install', 'webhook-inbox', '--help']));
    assert.match(output, /Usage: webhook-inbox/);
    assert.match(output, /serve/);
    const installed = await readdir(path.join(project, 'node_modules'));
    assert.ok(!installed.includes('tsx') && !installed.includes('esbuild'), 'no TypeScript runtime came with it');
  });

  test('an unsupported Node gets one line saying which Node is needed, not a stack trace', async () => {
    const preload = path.join(work, 'old-node.mjs');
    await writeFile(preload, "Object.defineProperty(process.versions, 'node', { value: '18.19.0' });\n");
    const bin = path.join(project, 'node_modules/webhook-inbox/bin/webhook-inbox.js');
    const cli = await sh(project, process.execPath, ['--import', preload, bin, '--help']);
    assert.equal(cli.code, 1);
    assert.equal(cli.output.trim(), 'webhook-inbox needs Node.js 20.12.0 or later; this is Node.js 18.19.0. Install a current Node.js LTS and run it again.');
    const library = await sh(project, process.execPath, ['--import', preload, '--input-type=module', '-e', "await import('webhook-inbox')"]);
    assert.notEqual(library.code, 0);
    assert.match(library.output, /Error: webhook-inbox needs Node\.js 20\.12\.0 or later; this is Node\.js 18\.19\.0/);
  });

  test('npx webhook-inbox demo runs the whole product on a temporary SQLite file', async () => {
    const output = await timed('demo', () => succeeds(project, 'npx', ['--no-install', 'webhook-inbox', 'demo']));
    assert.match(output, /Business effects: 4 orders, 3 active \+ 1 revoked enrollments/);
  });

  test('the examples compile against the declarations alone (skipLibCheck off), never against sources', async () => {
    const output = await timed('tsc', () => succeeds(project, 'npx', ['--no-install', 'tsc', '-p', '.', '--listFilesOnly']));
    const ours = output.split('\n').filter((file) => file.includes('node_modules/webhook-inbox/'));
    assert.ok(ours.length > 0 && ours.every((file) => file.endsWith('.d.ts')), ours.join('\n'));
    await timed('compile examples', () => succeeds(project, 'npx', ['--no-install', 'tsc', '-p', '.']));
  });

  test("the Express example: the team's handler, table, migration and transport; one effect for a duplicated, concurrent delivery", async () => {
    const output = await timed('express example', () => succeeds(project, process.execPath, ['dist/express/check.js']));
    assert.match(output, /express example: one licence and one welcome e-mail/);
  });

  test("the fastify example: the team's handler, table, migration and transport; one effect for a duplicated, concurrent delivery", async () => {
    const output = await timed('fastify example', () => succeeds(project, process.execPath, ['dist/fastify/check.js']));
    assert.match(output, /fastify example: one ledger entry and one CRM call/);
  });

  test('inboxes with no domain, with the course platform from its subpath, and with an example domain: each migrates the tables of its domains and no others', async () => {
    const output = await timed('domains', () => succeeds(project, process.execPath, ['domains-check.mjs']));
    const schemas = JSON.parse(output) as Record<'none' | 'coursePlatform' | 'example', { tables: string[]; payments: string[] }> & { fulfilmentUrl: string };
    const courseTables = ['orders', 'enrollments'];
    assert.deepEqual(
      schemas.none.tables.filter((table) => [...courseTables, 'grants'].includes(table)),
      [],
      'no domain, no domain table',
    );
    for (const { payments } of Object.values(schemas).filter((schema) => typeof schema === 'object')) {
      assert.deepEqual(
        payments.filter((column) => /course|user/.test(column)),
        [],
        'payments has no course column',
      );
    }
    assert.deepEqual(schemas.coursePlatform.tables.filter((table) => [...courseTables, 'grants'].includes(table)).sort(), ['enrollments', 'orders']);
    assert.deepEqual(
      schemas.example.tables.filter((table) => [...courseTables, 'grants'].includes(table)),
      ['grants'],
    );
    assert.equal(schemas.fulfilmentUrl, 'https://fulfil.example/orders', "the course platform's settings, read with the inbox's");
  });

  test('the plain JavaScript example runs as it is, with no build step: its domain, migration and transport; one effect for a duplicated, concurrent delivery', async () => {
    const output = await timed('plain JavaScript example', () => succeeds(project, process.execPath, ['plain-js/check.mjs']));
    assert.match(output, /plain JavaScript example: one membership and one door-access call/);
  });
});
