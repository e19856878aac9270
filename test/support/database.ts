import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';

/** The server the integration tests use; each test file gets a database of its own on it. */
const SERVER_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * Creates a uniquely named database for one test file. When the server is unreachable the file is
 * skipped locally, but fails when REQUIRE_SERVICES=1 (as in CI), so CI can never skip silently.
 */
export async function createTestDatabase(): Promise<TestDatabase | { skip: string }> {
  const name = `wi_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  let connection;
  try {
    connection = await createConnection({ uri: SERVER_URL, connectTimeout: 3000 });
  } catch (error) {
    const reason = `MariaDB not reachable at ${SERVER_URL}: ${(error as Error).message}`;
    if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${reason} (REQUIRE_SERVICES=1)`);
    return { skip: reason };
  }
  await connection.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await connection.end();
  return {
    url: `${SERVER_URL}/${name}`,
    async drop() {
      const c = await createConnection({ uri: SERVER_URL });
      await c.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await c.end();
    },
  };
}
