import type { Database } from './database';

/** Small key/value settings. Keys starting with `store.` are reserved for the store itself. */
export class MetaRepo {
  constructor(private readonly db: Database) {}

  get(key: string): string | undefined {
    return this.db.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key])?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db.write((tx) => {
      tx.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
    });
  }
}
