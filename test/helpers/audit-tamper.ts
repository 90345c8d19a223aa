import { Database } from '../../src/store';

/**
 * Changes the audit log of a stopped service's data directory the way someone with the files could:
 * through the store's own database files (snapshot and journal), not through any command.
 */
export async function tamperWithStore(dataDir: string, sql: string, params: (string | number)[] = []): Promise<void> {
  const db = await Database.open(dataDir);
  try {
    await db.write((tx) => tx.run(sql, params));
  } finally {
    await db.close();
  }
}
