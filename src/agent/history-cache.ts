import { isThenable } from '../platform/thenable';
import { messageRow, type MessageRow, type MessagesRepo, type NewMessage } from '../store';

/**
 * A conversation's cached rows: `kept[head..]`, each one's size in `sizes` (same index), and their sum;
 * `synced`: the database's last write (Database.lastWrite) when the rows were known to be all of the
 * conversation's (within the window); `cuts`: the store's count of retention cuts (HistoryStore.cuts)
 * before they were read.
 * `kept` is only appended to and cut from the front (a cut slot is cleared, `head` moves on; the array is
 * compacted once half of it is cut), so a stored row costs a push, not copies of the window. It is never
 * handed out: `rows` gives each caller a copy of its own (one a step), so no caller's change reaches it.
 */
interface Cached {
  kept: (MessageRow | undefined)[];
  sizes: number[];
  head: number;
  bytes: number;
  synced: number | undefined;
  cuts: number | undefined;
}

export interface HistoryCacheOptions {
  /**
   * The database's last write (Database.lastWrite): while it is the value a conversation was read or
   * stored at, nothing was written since and its cached rows are served without a read. Without it,
   * every call reads what was stored since the last row seen.
   */
  lastWrite?: () => number;
  /**
   * How many of retention's cuts changed bodies so far (HistoryStore.cuts): once it moved, a cached
   * conversation is read again, so a tool output cut since it was cached is given to the model cut.
   */
  cuts?: () => number;
  maxRows?: number;
  maxConversations?: number;
  maxBytes?: number;
  /** Told when a conversation's rows are let go (evicted, read again, deleted): what else holds them lets go too. */
  forgotten?: (conversationId: string) => void;
}

/** A row's size in memory, roughly: its text and its data as JSON (counted once, when it is cached). */
function rowBytes(row: MessageRow): number {
  return 200 + row.content.length + (row.data === null || row.data === undefined ? 0 : JSON.stringify(row.data).length);
}

/** An entry holding a read's rows (the read's array is the entry's: the caller is given a copy). */
function entryOf(rows: MessageRow[], synced: number | undefined, cuts: number | undefined): Cached {
  const sizes = rows.map(rowBytes);
  return { kept: rows, sizes, head: 0, bytes: sizes.reduce((sum, size) => sum + size, 0), synced, cuts };
}

/** The rows as a caller is given them: a copy of `kept[head..]`, the caller's own. */
function copyOf(entry: Cached): MessageRow[] {
  return entry.kept.slice(entry.head) as MessageRow[];
}

/** Appends `rows` to the entry, cut to its last `max` rows; returns how many bytes it holds more (negative: fewer). */
function append(entry: Cached, rows: readonly MessageRow[], max: number): number {
  let delta = 0;
  for (const row of rows) {
    const size = rowBytes(row);
    entry.kept.push(row);
    entry.sizes.push(size);
    delta += size;
  }
  while (entry.kept.length - entry.head > max) {
    delta -= entry.sizes[entry.head]!;
    entry.kept[entry.head] = undefined;
    entry.head += 1;
  }
  if (entry.head > 0 && entry.head * 2 >= entry.kept.length) {
    entry.kept = entry.kept.slice(entry.head);
    entry.sizes = entry.sizes.slice(entry.head);
    entry.head = 0;
  }
  entry.bytes += delta;
  return delta;
}

/** The seq of the entry's last row (0: none). */
function lastSeq(entry: Cached): number {
  return entry.kept.length > entry.head ? entry.kept[entry.kept.length - 1]!.seq : 0;
}

/** A message as a read of its row gives it back (messages.ts): absent fields null, `data` a copy through its JSON. */
function rowOf(message: NewMessage, seq: number): MessageRow {
  const { data } = message;
  const meta = {
    seq,
    id: message.id,
    conversation_id: message.conversation_id,
    role: message.role,
    timestamp: message.timestamp,
    tool_name: message.tool_name ?? null,
    user_id: message.user_id ?? null,
    client_key: message.client_key ?? null,
  };
  return messageRow(meta, message.content, data === undefined || data === null ? null : (JSON.parse(JSON.stringify(data)) as unknown));
}

/**
 * The recent stored messages of the conversations being worked on, so each step of the tool loop reads
 * only what was stored since the last step instead of re-reading (and re-decoding) the history, and
 * nothing when nothing was written since (`lastWrite`): the messages the agent stores itself are added
 * as it stores them (`stored`), not read back.
 * Messages are append-only, so "rows after the last seq seen" is always the complete update.
 * Bounded in rows, conversations and bytes (a message may be a megabyte, issue 20): past `maxBytes`
 * the least recently used conversations are forgotten, which costs only a read from the store.
 */
export class HistoryCache {
  private readonly entries = new Map<string, Cached>();
  /** Rows stored `later` and not yet added, by conversation (stored). */
  private readonly pending = new Map<string, () => void>();
  private bytes = 0;
  private readonly lastWrite: (() => number) | undefined;
  private readonly cuts: (() => number) | undefined;
  private readonly maxRows: number;
  private readonly maxConversations: number;
  private readonly maxBytes: number;
  private readonly forgotten: ((conversationId: string) => void) | undefined;

  constructor(
    private readonly messages: Pick<MessagesRepo, 'recent' | 'after' | 'seqOf'>,
    options: HistoryCacheOptions = {},
  ) {
    this.lastWrite = options.lastWrite;
    this.cuts = options.cuts;
    this.maxRows = options.maxRows ?? 500;
    this.maxConversations = options.maxConversations ?? 64;
    this.maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
    this.forgotten = options.forgotten;
  }

  /** Whether the conversation's rows are held now. */
  holds(conversationId: string): boolean {
    return this.entries.has(conversationId);
  }

  /** The conversation's recent rows, oldest first, in an array of the caller's own (the cache keeps none it gave out). */
  async rows(conversationId: string): Promise<MessageRow[]> {
    this.pending.get(conversationId)?.();
    // Taken before the read: a write (or a cut) while it runs leaves the entry behind the database, read again next time.
    const now = this.lastWrite?.();
    const cuts = this.cuts?.();
    // Rows held from before a retention cut are read again whole (the cut ones changed; messages are otherwise append-only).
    const cached = this.entries.get(conversationId);
    if (!cached || cached.cuts !== cuts) {
      const read = entryOf(await this.messages.recent(conversationId, { limit: this.maxRows, includeTools: true }), now, cuts);
      this.forget(conversationId);
      this.keep(conversationId, read);
      return copyOf(read);
    }
    if (now === undefined || cached.synced !== now) {
      const fresh = await this.messages.after(conversationId, lastSeq(cached));
      // Another call's read may have added some of them meanwhile (`instructionFiles` reads outside the turn's queue).
      const last = lastSeq(cached);
      this.detach(conversationId);
      append(
        cached,
        fresh.filter((row) => row.seq > last),
        this.maxRows,
      );
      cached.synced = now;
    } else this.detach(conversationId);
    this.keep(conversationId, cached);
    return copyOf(cached);
  }

  /**
   * Stores `messages` of the conversation with `write` (called at once; a store write is applied
   * synchronously, made durable later) and returns what it returns. When the conversation's rows were
   * all cached and this write is the only one since, its rows are added as the database now holds them
   * (their seqs read by id), so the next `rows` reads nothing; otherwise that read finds them.
   * `later`: they are added at the loop's next check phase, after the journal's flush that writes the
   * record (its setImmediate, asked in `write`, comes first), so the seqs are read while the record is
   * written and synced, not before its write begins (the turn's reply); `rows` adds them first if
   * called sooner. Anything written or read in between, and they are left to that read.
   */
  stored<T>(conversationId: string, messages: readonly NewMessage[], write: () => T, later = false): T {
    const before = this.lastWrite?.();
    const result = write();
    const cached = this.entries.get(conversationId);
    if (before === undefined || !cached || cached.synced !== before || this.lastWrite!() !== before + 1) return result;
    // Rows added below under the seqs given before their statements ran (writePlanned applies them behind
    // the record): a write that fails once applied (its record voided) leaves them out of the database, so
    // the conversation is read again (review20a). Only where rows are added: nothing else to undo.
    if (isThenable(result)) result.then(undefined, () => this.forget(conversationId));
    const add = (): void => {
      if (this.pending.get(conversationId) === add) this.pending.delete(conversationId);
      if (this.entries.get(conversationId) !== cached || this.lastWrite!() !== before + 1) return;
      let last = lastSeq(cached);
      const rows: MessageRow[] = [];
      for (const message of messages) {
        const seq = message.conversation_id === conversationId ? this.messages.seqOf(message.id) : undefined;
        // Not applied (a full disk's owed records go first) or not in order: the next read sees what is there.
        if (seq === undefined || seq <= last) return;
        last = seq;
        rows.push(rowOf(message, seq));
      }
      this.detach(conversationId);
      append(cached, rows, this.maxRows);
      cached.synced = before + 1;
      this.keep(conversationId, cached);
    };
    if (!later) add();
    else {
      this.pending.set(conversationId, add);
      // Nothing catches in an immediate: a store closed meanwhile (the warm-up's scratch store, stopped by a
      // first chat) would end the process. The conversation is then forgotten: the next `rows` reads it.
      setImmediate(() => {
        try {
          add();
        } catch {
          this.forget(conversationId);
        }
      });
    }
    return result;
  }

  /**
   * Keeps `next` as the conversation's entry, most recently used, within the bounds (the least recently
   * used forgotten past them). The entry was taken out first (`detach` or `forget`, before it changed:
   * its bytes are counted out as they were).
   */
  private keep(conversationId: string, next: Cached): void {
    // Map order is insertion order: re-inserting keeps the most recently used last.
    this.entries.set(conversationId, next);
    this.bytes += next.bytes;
    for (const [id] of this.entries) {
      if (this.entries.size <= this.maxConversations && this.bytes <= this.maxBytes) break;
      // The one just read too, when it alone is over: the caller has its rows.
      this.forget(id);
    }
  }

  /** Lets go of the conversation's rows (deleted, or read again next time), and says so (`forgotten`). */
  forget(conversationId: string): void {
    if (this.detach(conversationId)) this.forgotten?.(conversationId);
  }

  /** Takes the entry out, its bytes counted out, to be kept again (`keep`: most recently used) or let go. */
  private detach(conversationId: string): boolean {
    const cached = this.entries.get(conversationId);
    if (!cached) return false;
    this.bytes -= cached.bytes;
    this.entries.delete(conversationId);
    return true;
  }
}
