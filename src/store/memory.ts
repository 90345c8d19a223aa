import { randomUUID } from 'node:crypto';
import { wellFormed } from '../protocol/code-points';
import type { Database } from './database';
import type { MemoryRow } from './types';

const COLUMNS = 'id, content, created_at, updated_at';
const ORDER = 'ORDER BY updated_at DESC, created_at DESC, id DESC';

function likePattern(word: string): string {
  return `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export class MemoryRepo {
  constructor(private readonly db: Database) {}

  /**
   * Remembers `content` (the model's `remember` tool), stored well-formed (code-points.ts wellFormed: sql.js's
   * UTF-8 binding would read a lone surrogate back as three U+FFFD). The id and time are generated unless given.
   */
  async put(content: string, options: { id?: string; now?: string } = {}): Promise<{ id: string }> {
    const id = options.id ?? randomUUID();
    const now = options.now ?? new Date().toISOString();
    await this.db.write((tx) => {
      tx.run('INSERT INTO memory (id, content, created_at, updated_at) VALUES (?, ?, ?, ?)', [id, wellFormed(content), now, now]);
    });
    return { id };
  }

  get(id: string): MemoryRow | undefined {
    return this.db.get<MemoryRow>(`SELECT ${COLUMNS} FROM memory WHERE id = ?`, [id]);
  }

  /** Entries containing every word of `query` (case-insensitive for ASCII), newest first. */
  search(query: string, limit = 20): MemoryRow[] {
    const words = query
      .split(/\s+/)
      .filter((w) => w.length > 0)
      .slice(0, 16);
    const n = Math.floor(limit);
    if (words.length === 0 || !(n > 0)) return [];
    const where = words.map(() => "content LIKE ? ESCAPE '\\'").join(' AND ');
    return this.db.all<MemoryRow>(`SELECT ${COLUMNS} FROM memory WHERE ${where} ${ORDER} LIMIT ?`, [...words.map(likePattern), n]);
  }

  delete(id: string): Promise<boolean> {
    return this.db.write((tx) => tx.run('DELETE FROM memory WHERE id = ?', [id]).changes > 0);
  }

  /** The newest `limit` entries. */
  all(limit = 100): MemoryRow[] {
    const n = Math.floor(limit);
    if (!(n > 0)) return [];
    return this.db.all<MemoryRow>(`SELECT ${COLUMNS} FROM memory ${ORDER} LIMIT ?`, [n]);
  }
}
