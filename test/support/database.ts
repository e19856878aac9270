import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import type { CoursePlatformDatabase, CoursePlatformTables } from '../../src/course-platform/schema.js';
import { backendFor } from '../../src/db/open-database.js';
import { cli } from './cli.js';

/** The MySQL server the integration tests use; each test file gets a database of its own on it. */
const MYSQL_SERVER_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

/** The PostgreSQL server the integration tests use, the same way. */
const POSTGRES_SERVER_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';

/** Every store adapter: the contract and HTTP-level suites run once per entry. */
export const STORE_BACKENDS = ['mysql', 'postgres', 'sqlite'] as const;
export type StoreBackendName = (typeof STORE_BACKENDS)[number];

export interface TestDatabase {
  backend: StoreBackendName;
  url: string;
  drop(): Promise<void>;
}

export type TestDatabaseOrSkip = TestDatabase | { skip: string };

const CREATE: Record<StoreBackendName, () => Promise<TestDatabaseOrSkip>> = {
  mysql: createMysqlDatabase,
  postgres: createPostgresDatabase,
  sqlite: createSqliteDatabase,
};

/**
 * Creates a uniquely named database for one test file: a MySQL or PostgreSQL database on the shared
 * server, or a SQLite file in a fresh temporary directory. When a server is unreachable the file's
 * tests on it are skipped locally, but fail when REQUIRE_SERVICES=1 (as in CI), so CI can never skip
 * silently.
 */
export async function createTestDatabase(backend: StoreBackendName = 'mysql'): Promise<TestDatabaseOrSkip> {
  return CREATE[backend]();
}

/**
 * Why tests that create databases of their own on `backend`'s server are skipped (it is not
 * reachable; REQUIRE_SERVICES=1 fails instead), or false: a probe database, created and dropped.
 */
export async function skipUnlessServer(backend: 'mysql' | 'postgres'): Promise<string | false> {
  const probe = await createTestDatabase(backend);
  if ('skip' in probe) return probe.skip;
  await probe.drop();
  return false;
}

/** One database per backend, keyed by backend name, for files that run their suite on every store. */
export async function createTestDatabases(): Promise<Record<StoreBackendName, TestDatabaseOrSkip>> {
  return { mysql: await createMysqlDatabase(), postgres: await createPostgresDatabase(), sqlite: await createSqliteDatabase() };
}

/**
 * A test's own connections to the database the service uses, through the store's own backend (so
 * one query serves every store): counts, invariants, row locks held on purpose. Destroy it after use.
 */
export function inspectDatabase(url: string, poolSize = 4): Kysely<CoursePlatformDatabase> {
  return backendFor(url).connect(url, { poolSize }).withTables<CoursePlatformTables>();
}

/** Migrates the database with the CLI, as an operator would, then opens the test's own connections to it. */
export async function migratedDatabase(url: string): Promise<Kysely<CoursePlatformDatabase>> {
  const migrate = await cli(['migrate'], { DATABASE_URL: url });
  assert.equal(migrate.code, 0, migrate.output);
  return inspectDatabase(url);
}

function unreachable(reason: string): { skip: string } {
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${reason} (REQUIRE_SERVICES=1)`);
  return { skip: reason };
}

async function createMysqlDatabase(): Promise<TestDatabaseOrSkip> {
  const name = `wi_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  let connection;
  try {
    connection = await createConnection({ uri: MYSQL_SERVER_URL, connectTimeout: 3000 });
  } catch (error) {
    return unreachable(`MariaDB not reachable at ${MYSQL_SERVER_URL}: ${(error as Error).message}`);
  }
  await connection.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await connection.end();
  return {
    backend: 'mysql',
    url: `${MYSQL_SERVER_URL}/${name}`,
    async drop() {
      const c = await createConnection({ uri: MYSQL_SERVER_URL });
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await c.end();
    },
  };
}

/** Runs `statement` on the server's maintenance database. */
async function onPostgresServer(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${POSTGRES_SERVER_URL}/postgres`, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query(statement);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A database with the server's default collation, not the byte-order one the store creates for
 * itself: the store's columns must compare byte for byte on their own.
 */
async function createPostgresDatabase(): Promise<TestDatabaseOrSkip> {
  const name = `wi_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  try {
    await onPostgresServer(`create database ${name}`);
  } catch (error) {
    return unreachable(`PostgreSQL not reachable at ${POSTGRES_SERVER_URL}: ${(error as Error).message}`);
  }
  return {
    backend: 'postgres',
    url: `${POSTGRES_SERVER_URL}/${name}`,
    drop: () => onPostgresServer(`drop database if exists ${name} with (force)`),
  };
}

async function createSqliteDatabase(): Promise<TestDatabase> {
  const directory = await mkdtemp(join(tmpdir(), 'wi-test-'));
  return {
    backend: 'sqlite',
    url: `sqlite:${join(directory, 'inbox.db')}`,
    async drop() {
      await rm(directory, { recursive: true, force: true });
    },
  };
}
