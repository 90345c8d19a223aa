// Reads kept in memory while no write could have changed them (s19, turn19a): a turn's look-ups of its
// conversation's owner and worktree. Every change to the database is a statement of a write (Database.write,
// writePlanned; replay at open runs before any reader exists), and each statement's text is shown to the
// watches first: a statement a watch says may touch what its memo kept (by default, one that names its
// table) empties that memo before it runs. The schema has no trigger and no foreign key of the kept tables
// (test/store/read-memo.test.ts checks), so a statement that does not name a table does not change it.

/** A count of the write statements that may have changed what a memo kept (ReadMemo). */
export class WriteWatch {
  version = 0;
  constructor(readonly touches: (sql: string) => boolean) {}
}

/** Texts kept with the watches they touch; beyond this many, forgotten and asked again. */
const MAX_TEXTS = 1024;

/**
 * Keys longer than this are read each time, never kept: the keys are ids (a UUID is 36 characters), and a
 * client may send an id of megabytes (the chat's conversation_id), 1,024 of which would stay in memory.
 */
const MAX_KEY_CHARS = 128;

/** A database's watches, shown every statement of its writes before it runs (Database's `saw`). */
export class WriteWatches {
  private readonly watches: WriteWatch[] = [];
  /** Per statement text, the watches it touches: asked once a text. */
  private readonly touched = new Map<string, readonly WriteWatch[]>();

  add(touches: (sql: string) => boolean): WriteWatch {
    const watch = new WriteWatch(touches);
    this.watches.push(watch);
    this.touched.clear();
    return watch;
  }

  saw(sql: string): void {
    let hit = this.touched.get(sql);
    if (hit === undefined) {
      hit = this.watches.filter((w) => w.touches(sql));
      if (this.touched.size >= MAX_TEXTS) this.touched.clear();
      this.touched.set(sql, hit);
    }
    for (let i = 0; i < hit.length; i += 1) hit[i].version += 1;
  }
}

/** What a ReadMemo needs of its database (Database). */
export interface MemoDatabase {
  watch(touches: (sql: string) => boolean): WriteWatch;
  /** Not closed: a closed store's reads say so, none is answered from memory. */
  readonly isOpen: boolean;
  /** Inside a write's transaction: what a read sees then may yet be rolled back, so it is not kept. */
  readonly writing: boolean;
}

/** A statement that names `table` as a word (quoted or not, any case). */
export function names(table: string): (sql: string) => boolean {
  const word = new RegExp(`\\b${table}\\b`, 'i');
  return (sql) => word.test(sql);
}

/**
 * Values read by key (`read`), kept while no write statement touched them (`touches`): at most `max` keys,
 * the oldest dropped first, none longer than MAX_KEY_CHARS. `undefined` (no row) is kept like any value.
 */
export class ReadMemo<V> {
  private readonly entries = new Map<string, V>();
  private readonly watch: WriteWatch;
  private seen: number;

  constructor(
    private readonly db: MemoDatabase,
    touches: (sql: string) => boolean,
    private readonly read: (key: string) => V,
    private readonly max = 1024,
  ) {
    this.watch = db.watch(touches);
    this.seen = this.watch.version;
  }

  get(key: string): V {
    if (this.watch.version !== this.seen) {
      this.entries.clear();
      this.seen = this.watch.version;
    }
    const kept = this.entries.get(key);
    if ((kept !== undefined || this.entries.has(key)) && this.db.isOpen) return kept as V;
    const value = this.read(key);
    if (!this.db.writing && key.length <= MAX_KEY_CHARS) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, value);
    }
    return value;
  }
}
