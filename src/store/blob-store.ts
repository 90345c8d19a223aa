import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { isAtomicTempName, writeFileAtomic } from '../platform/atomic-write';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../platform/file-modes';
import { BlobGuard, type BlobReferences, type Collected } from './blob-guard';

/** The name of the blob folder in the data directory. */
export const BLOBS_DIR_NAME = 'blobs';

/**
 * Test-only fault points of a collection (test/store/blob-collection.test.ts): the process kills itself
 * with SIGKILL before its first removal or after it, to show that a crash between the rows' deletion and
 * the files' removal loses nothing referred to. Read here only; never set in production.
 */
export const COLLECT_FAULT_ENV = 'RA_TEST_FAULT_BLOB_COLLECT';

function faultPoint(name: 'before-remove' | 'after-remove', removed: number): void {
  if (removed === 0 && process.env[COLLECT_FAULT_ENV] === name) process.kill(process.pid, 'SIGKILL');
}

/** Blobs are named by the SHA-256 of their bytes, in lowercase hex. */
const HASH_PATTERN = /^[0-9a-f]{64}$/;

export interface BlobRef {
  /** SHA-256 of the bytes, lowercase hex. */
  hash: string;
  size: number;
}

/** A blob file whose bytes no longer hash to its name (a damaged disk, a hand-edited file). */
export class BlobDamagedError extends Error {
  constructor(readonly hash: string) {
    super(`stored blob ${hash.slice(0, 12)}… is damaged (its bytes do not match its hash)`);
    this.name = 'BlobDamagedError';
  }
}

export function isBlobHash(value: unknown): value is string {
  return typeof value === 'string' && HASH_PATTERN.test(value);
}

function checkHash(hash: string): void {
  if (!isBlobHash(hash)) throw new TypeError(`not a blob hash: ${JSON.stringify(String(hash).slice(0, 80))}`);
}

/** How a put through `holding` treats bytes already stored. */
export interface HoldingOptions {
  /**
   * Writes them anew all the same (a temp file, its fsync, the rename over the same bytes, the folder's
   * fsync), as for bytes never stored: a person's upload must not answer sooner because another person
   * stored the same bytes before (the answer's time would tell; docs/design.md, "(s36, dedup36)").
   */
  writeEvenIfStored?: boolean;
}

export function hashBytes(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * What both blob stores share: puts, held puts and collection, kept from racing each other (BlobGuard).
 * A store says how it writes, lists and removes one blob.
 */
abstract class GuardedBlobs {
  private readonly guard = new BlobGuard();

  /**
   * Stores `data` durably and returns its hash; storing the same bytes again writes nothing. A row that
   * will refer to the blob is written after this resolves: put through `holding` instead, so that no
   * collection removes the blob in between.
   */
  put(data: Uint8Array | string): Promise<BlobRef> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    return this.stored(bytes, hashBytes(bytes));
  }

  /**
   * Runs `step`, whose puts (through the `put` it is given) are held from collection until it settles:
   * the step writes the rows that refer to them (an attachment's, a file change's), so a blob is never
   * removed between its put and its row (BlobGuard).
   */
  holding<T>(step: (put: (data: Uint8Array | string) => Promise<BlobRef>) => Promise<T>, options: HoldingOptions = {}): Promise<T> {
    return this.guard.holding(step, (bytes, hash) => this.stored(bytes, hash, options.writeEvenIfStored === true), hashBytes);
  }

  /**
   * Removes the blobs among `candidates` (every stored one when omitted) that no row refers to (`refs`),
   * none held by a put or put since the collection started, once `refs.durable()` resolved (BlobGuard.collect):
   * a crash never brings back a row whose blob is gone.
   */
  async collect(refs: BlobReferences, candidates?: readonly string[]): Promise<Collected> {
    // Listed names are hashes already (`list`); given ones are checked.
    candidates?.forEach(checkHash);
    const listed = candidates ?? (await this.list());
    return this.guard.collect(listed, refs, (hash) => this.removeOne(hash));
  }

  /** Runs `step` (a backup's copy) with no blob removed meanwhile (BlobGuard.withoutRemovals). */
  withoutRemovals<T>(step: () => Promise<T>): Promise<T> {
    return this.guard.withoutRemovals(step);
  }

  private async stored(bytes: Uint8Array, hash: string, evenIfStored = false): Promise<BlobRef> {
    // Seen by a collection running now (never removed by it), and written anew after a removal of the same bytes in flight.
    this.guard.touched(hash);
    await this.guard.removing(hash);
    return this.write(bytes, hash, evenIfStored);
  }

  /** Stores the bytes (of that hash) unless they are there, or even so (`evenIfStored`, HoldingOptions). */
  protected abstract write(bytes: Uint8Array, hash: string, evenIfStored: boolean): Promise<BlobRef>;
  /** Every stored blob's hash. */
  protected abstract list(): Promise<string[]>;
  /** Removes one blob: the bytes freed, undefined when there was none. */
  protected abstract removeOne(hash: string): Promise<number | undefined>;
}

/**
 * Bulky binary content (attachments, files' before-images) kept outside the in-memory database, one
 * file per distinct content: `blobs/<2 hex>/<sha256>`. A blob is written to a temp file, fsynced,
 * renamed into place and its folder fsynced before `put` resolves, so a caller that stores the hash in
 * the database afterwards (the journal's own fsync) never references a blob a crash could lose; a
 * crash before the rename leaves only a temp file, removed at the next open. Identical content is
 * stored once. Reads check the hash, so a damaged file is reported, never served.
 */
export class BlobStore extends GuardedBlobs {
  /** Files removed so far (the test-only fault points count them). */
  private removals = 0;

  private constructor(readonly dir: string) {
    super();
  }

  static async open(dir: string): Promise<BlobStore> {
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const store = new BlobStore(dir);
    await store.removeLeftoverTemps();
    return store;
  }

  private pathOf(hash: string): string {
    return path.join(this.dir, hash.slice(0, 2), hash);
  }

  protected async write(bytes: Uint8Array, hash: string, evenIfStored: boolean): Promise<BlobRef> {
    const target = this.pathOf(hash);
    // Only complete files are ever renamed into place, so a file of the right size holds these bytes.
    if (!evenIfStored && (await stat(target).catch(() => undefined))?.size === bytes.length) return { hash, size: bytes.length };
    await mkdir(path.dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
    try {
      await writeFileAtomic(target, bytes, { mode: PRIVATE_FILE_MODE });
    } catch (error) {
      // Written over the same bytes (evenIfStored) and the rename refused after its retries (Windows, while a
      // reader holds the file open; an immutable file): the bytes are there all the same, the put succeeds.
      if (evenIfStored && (await stat(target).catch(() => undefined))?.size === bytes.length) return { hash, size: bytes.length };
      throw error;
    }
    return { hash, size: bytes.length };
  }

  protected async removeOne(hash: string): Promise<number | undefined> {
    const info = await stat(this.pathOf(hash)).catch(() => undefined);
    faultPoint('before-remove', this.removals);
    const gone = await this.unlinkBlob(hash);
    faultPoint('after-remove', this.removals);
    this.removals += 1;
    return gone ? (info?.size ?? 0) : undefined;
  }

  /** The blob's bytes, or undefined when there is none; BlobDamagedError when the file is damaged. */
  async get(hash: string): Promise<Buffer | undefined> {
    checkHash(hash);
    let bytes: Buffer;
    try {
      bytes = await readFile(this.pathOf(hash));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if (hashBytes(bytes) !== hash) throw new BlobDamagedError(hash);
    return bytes;
  }

  async has(hash: string): Promise<boolean> {
    checkHash(hash);
    return (await stat(this.pathOf(hash)).catch(() => undefined)) !== undefined;
  }

  /** Removes a blob; true when there was one. Only `collect` removes: it checks that nothing refers to it. */
  private async unlinkBlob(hash: string): Promise<boolean> {
    try {
      await unlink(this.pathOf(hash));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  protected async list(): Promise<string[]> {
    const all: string[] = [];
    for await (const hash of this.hashes()) all.push(hash);
    return all;
  }

  /** Every stored blob's hash (for a clean-up that removes what nothing references). */
  async *hashes(): AsyncGenerator<string> {
    for (const folder of await readdir(this.dir, { withFileTypes: true })) {
      if (!folder.isDirectory() || !/^[0-9a-f]{2}$/.test(folder.name)) continue;
      for (const name of await readdir(path.join(this.dir, folder.name))) {
        if (isBlobHash(name) && name.startsWith(folder.name)) yield name;
      }
    }
  }

  /** Temp files of puts a crash cut short (writeFileAtomic's, beside the blob they were to become). */
  private async removeLeftoverTemps(): Promise<void> {
    for (const folder of await readdir(this.dir, { withFileTypes: true })) {
      if (!folder.isDirectory()) continue;
      for (const name of await readdir(path.join(this.dir, folder.name))) {
        const target = name.slice(1).split('.')[0];
        if (isBlobHash(target) && isAtomicTempName(name, target)) await unlink(path.join(this.dir, folder.name, name)).catch(() => undefined);
      }
    }
  }
}

/** What the store's users call of its blobs: the data directory's (BlobStore), or a scratch store's (MemoryBlobs). */
export type Blobs = Pick<BlobStore, 'put' | 'holding' | 'get' | 'has' | 'collect' | 'withoutRemovals' | 'hashes'>;

/**
 * Blobs kept in memory and dropped with it, named and checked as BlobStore's: a scratch store's
 * (store/scratch.ts), whose practice turn must write nothing to the data directory.
 */
export class MemoryBlobs extends GuardedBlobs implements Blobs {
  private readonly bytes = new Map<string, Buffer>();

  async get(hash: string): Promise<Buffer | undefined> {
    checkHash(hash);
    const bytes = this.bytes.get(hash);
    return bytes && Buffer.from(bytes);
  }

  async has(hash: string): Promise<boolean> {
    checkHash(hash);
    return this.bytes.has(hash);
  }

  async *hashes(): AsyncGenerator<string> {
    yield* [...this.bytes.keys()];
  }

  protected async write(bytes: Uint8Array, hash: string): Promise<BlobRef> {
    // Memory only (a scratch store's practice turn, no upload): no time to hide.
    if (!this.bytes.has(hash)) this.bytes.set(hash, Buffer.from(bytes));
    return { hash, size: bytes.length };
  }

  protected async list(): Promise<string[]> {
    return [...this.bytes.keys()];
  }

  protected async removeOne(hash: string): Promise<number | undefined> {
    const size = this.bytes.get(hash)?.length;
    this.bytes.delete(hash);
    return size;
  }
}
