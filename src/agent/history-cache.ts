import type { MessageRow, MessagesRepo } from '../store';

/** A conversation's cached rows, each one's size, and their sum. */
interface Cached {
  rows: MessageRow[];
  sizes: number[];
  bytes: number;
}

/** A row's size in memory, roughly: its text and its data as JSON (counted once, when it is cached). */
function rowBytes(row: MessageRow): number {
  return 200 + row.content.length + (row.data === null || row.data === undefined ? 0 : JSON.stringify(row.data).length);
}

function sized(rows: MessageRow[]): Cached {
  const sizes = rows.map(rowBytes);
  return { rows, sizes, bytes: sizes.reduce((sum, size) => sum + size, 0) };
}

/** The last `max` rows of `cached`. */
function keepLast(cached: Cached, max: number): Cached {
  const cut = cached.rows.length - max;
  if (cut <= 0) return cached;
  const freed = cached.sizes.slice(0, cut).reduce((sum, size) => sum + size, 0);
  return { rows: cached.rows.slice(cut), sizes: cached.sizes.slice(cut), bytes: cached.bytes - freed };
}

/**
 * The recent stored messages of the conversations being worked on, so each step of the tool loop reads
 * only what was stored since the last step instead of re-reading (and re-decoding) the history.
 * Messages are append-only, so "rows after the last seq seen" is always the complete update.
 * Bounded in rows, conversations and bytes (a message may be a megabyte, issue 20): past `maxBytes`
 * the least recently used conversations are forgotten, which costs only a read from the store.
 */
export class HistoryCache {
  private readonly entries = new Map<string, Cached>();
  private bytes = 0;

  constructor(
    private readonly messages: Pick<MessagesRepo, 'recent' | 'after'>,
    private readonly maxRows = 500,
    private readonly maxConversations = 64,
    private readonly maxBytes = 32 * 1024 * 1024,
  ) {}

  async rows(conversationId: string): Promise<MessageRow[]> {
    const cached = this.entries.get(conversationId);
    let next: Cached;
    if (!cached) {
      next = sized(await this.messages.recent(conversationId, { limit: this.maxRows, includeTools: true }));
    } else {
      const last = cached.rows.length > 0 ? cached.rows[cached.rows.length - 1]!.seq : 0;
      const fresh = sized(await this.messages.after(conversationId, last));
      next = fresh.rows.length === 0 ? cached : keepLast({ rows: [...cached.rows, ...fresh.rows], sizes: [...cached.sizes, ...fresh.sizes], bytes: cached.bytes + fresh.bytes }, this.maxRows);
    }
    // Map order is insertion order: re-inserting keeps the most recently used last.
    this.forget(conversationId);
    this.entries.set(conversationId, next);
    this.bytes += next.bytes;
    for (const [id] of this.entries) {
      if (this.entries.size <= this.maxConversations && this.bytes <= this.maxBytes) break;
      // The one just read too, when it alone is over: the caller has its rows.
      this.forget(id);
    }
    return next.rows;
  }

  forget(conversationId: string): void {
    const cached = this.entries.get(conversationId);
    if (!cached) return;
    this.bytes -= cached.bytes;
    this.entries.delete(conversationId);
  }
}
