import type { Config } from '../config/config.js';
import { migrateToLatest, openStorage } from '../db/database.js';

export async function migrateCommand(config: Readonly<Config>): Promise<number> {
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  try {
    const applied = await migrateToLatest(storage.db);
    process.stderr.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database schema is up to date\n');
    return 0;
  } finally {
    await storage.close();
  }
}
