/** What a collection asks of the rows that refer to blobs (blob-refs.ts reads them from the database). */
export interface BlobReferences {
  /**
   * Of `hashes`, those no row refers to. May be read in slices with the loop free between them (blob-refs.ts):
   * a row written meanwhile may be missed, which the guard answers for (see `collect`).
   */
  unreferenced(hashes: readonly string[]): Promise<string[]>;
  /** Resolves once every write made so far is durable (a deletion that unreferenced a blob, before its file goes). */
  durable(): Promise<void>;
}

export interface Collected {
  removed: number;
  bytes: number;
  /** Removals were left for a later collection: a backup was copying the blobs (BlobGuard.withoutRemovals). */
  deferred?: true;
}

/**
 * Keeps a collection from removing a blob a row is about to refer to (a blob store's, file or memory).
 * A blob is put before the row naming it is written (an upload's attachment row, a turn's file change,
 * a tool's image with its result), and storing bytes already there returns at once, so a blob nothing
 * refers to at a collection's read may be wanted again a moment later. Three in-memory facts close that:
 *
 * - held: hashes put through `holding`, until its step (the put and the row's write) settles;
 * - seen: each running collection's own, the hashes held when it started or put since (not another's: a
 *   set shared while any ran was cleared only once none did, so collections overlapping without end, an
 *   upload's each, left every blob put meanwhile for good; s36, review36);
 * - in removal: a put of bytes being removed waits for the removal, then writes them anew.
 *
 * The rows may be read in slices with the loop free between them (blob-refs.ts), so a row written during
 * the read may be missed: every row is written after a put of its hash (held, hence seen), which is why
 * the seen set starts before the first slice. The held and seen sets are checked and a removal registered
 * in one synchronous stretch, so no put slips between. None of it needs to survive a crash: a blob put before a crash whose
 * row never came is garbage a later collection frees (the maintenance's first pass collects).
 */
export class BlobGuard {
  private readonly held = new Map<string, number>();
  /** The running collections' `seen` sets (see the class). */
  private readonly collections = new Set<Set<string>>();
  private readonly inRemoval = new Map<string, Promise<unknown>>();
  private paused = 0;

  /** Called by a put first thing, synchronously: what a collection running now must leave. */
  touched(hash: string): void {
    for (const seen of this.collections) seen.add(hash);
  }

  /** Resolves once a removal of `hash` in flight (if any) is over: the put then writes the bytes anew. */
  async removing(hash: string): Promise<void> {
    await this.inRemoval.get(hash)?.catch(() => undefined);
  }

  /** Runs `step` with every hash it puts held (see the class); `put` is the store's put of already-hashed bytes. */
  async holding<T, R>(step: (put: (data: Uint8Array | string) => Promise<R>) => Promise<T>, put: (bytes: Uint8Array, hash: string) => Promise<R>, hashOf: (bytes: Uint8Array) => string): Promise<T> {
    const held: string[] = [];
    try {
      return await step((data) => {
        const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
        const hash = hashOf(bytes);
        this.held.set(hash, (this.held.get(hash) ?? 0) + 1);
        held.push(hash);
        return put(bytes, hash);
      });
    } finally {
      for (const hash of held) {
        const left = this.held.get(hash)! - 1;
        if (left === 0) this.held.delete(hash);
        else this.held.set(hash, left);
      }
    }
  }

  /**
   * Runs `step` (a backup: the database's snapshot, then the blobs it names) with no blob removed
   * meanwhile: a collection reaching a removal leaves the rest for later (`deferred`).
   */
  async withoutRemovals<T>(step: () => Promise<T>): Promise<T> {
    this.paused += 1;
    try {
      return await step();
    } finally {
      this.paused -= 1;
    }
  }

  /**
   * Removes (by `removeOne`, which answers the bytes freed or undefined when there was nothing) those of
   * `listed` no row refers to and no put held or touched since the collection started; the rows' writes made
   * durable first.
   */
  async collect(listed: readonly string[], refs: BlobReferences, removeOne: (hash: string) => Promise<number | undefined>): Promise<Collected> {
    const collected = { removed: 0, bytes: 0 };
    // The read may be sliced: a put held now may write its row after the slice that would have read it (at a
    // rowid the read has passed), so it is left alone as a put seen meanwhile is; so is every put from now on.
    const seen = new Set(this.held.keys());
    this.collections.add(seen);
    try {
      const garbage = (await refs.unreferenced(listed)).filter((hash) => !this.held.has(hash));
      if (garbage.length === 0) return collected;
      await refs.durable();
      for (const hash of garbage) {
        if (this.paused > 0) return { ...collected, deferred: true };
        if (this.held.has(hash) || seen.has(hash)) continue;
        const removal = removeOne(hash);
        this.inRemoval.set(hash, removal);
        let size: number | undefined;
        try {
          size = await removal;
        } finally {
          this.inRemoval.delete(hash);
        }
        if (size === undefined) continue;
        collected.removed += 1;
        collected.bytes += size;
      }
      return collected;
    } finally {
      this.collections.delete(seen);
    }
  }
}
