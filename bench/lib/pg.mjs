/**
 * PostgreSQL helper shared by the bench and soak scripts: one short-lived client for an
 * administrative step (create or drop a throw-away database, read a setting, ANALYZE), always closed.
 */
import pg from 'pg';

/** Runs `fn` with a connected client on `url` and closes the client whatever `fn` does. */
export async function withPg(url, fn) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}
