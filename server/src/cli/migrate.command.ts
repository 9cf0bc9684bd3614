import type { Config } from '../config/config.js';
import { migrateToLatest, openStorage } from '../db/database.js';

export async function migrateCommand(config: Readonly<Config>): Promise<number> {
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const { applied, newer } = await migrateToLatest(storage.db);
    if (newer.length > 0) process.stderr.write(`database schema is newer than this build (${newer.join(', ')}): left as it is\n`);
    else process.stderr.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database schema is up to date\n');
    return 0;
  } finally {
    await storage.close();
  }
}
