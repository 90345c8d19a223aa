// The check of history.db at open (docs/design.md, "History that grows for years", Damage). A full
// `PRAGMA quick_check` reads every page (O(size): minutes for a 10 GB file), so the open checks what is
// cheap and catches the damage seen in practice, a file cut short (a copy interrupted, a file system
// repaired after a crash): every page SQLite will read from the file must lie inside it. Pages whose
// newest version is in the WAL are read from there, so the WAL's frame headers are read (not its pages),
// all before SQLite opens the file (its close would checkpoint the WAL into it). Damage elsewhere is found when a read meets it; the store then reports it (/health degraded) and notes
// it in the file, so the next open refuses it too.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import type { Database as SqliteFile } from 'node-sqlite3-wasm';
import { DAMAGE_SEEN_KEY } from './protocol';

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const WAL_MAGIC = 0x377f0682;
/** SQLite's lock byte (PENDING_BYTE): the page holding it is never written. */
const LOCK_BYTE_OFFSET = 0x40000000; // the low bit says the checksums' byte order; either is a WAL
/** The newest bodies read whole at open (their pages, overflow included): damage at the file's end shows. */
const RECENT_BODIES_CHECKED = 64;

/** What a WAL holds: its pages (as `pagesInWal`), the database's size in pages at its last commit (0: none) and its page size. */
interface WalCommits {
  pages: Set<number>;
  databasePages: number;
  pageSize: number;
}

/** A page size SQLite accepts: a power of two from 512 to 65536. */
function validPageSize(size: number): boolean {
  return size >= 512 && size <= 65536 && (size & (size - 1)) === 0;
}

/** Frames read (and checksummed) at a time. */
const FRAMES_A_READ = 64;

const NATIVE_LITTLE_ENDIAN = endianness() === 'LE';

/**
 * SQLite's WAL checksum of `length` bytes of `view` from `offset` (8-byte aligned), as 32-bit words read
 * big-endian when `bigEndian`, continuing from `sums`, which it updates: s0 += x[i] + s1, s1 += x[i+1] +
 * s0, modulo 2^32.
 */
function addChecksum(sums: Uint32Array, view: DataView, offset: number, length: number, bigEndian: boolean): void {
  let s0 = sums[0];
  let s1 = sums[1];
  if (!bigEndian && NATIVE_LITTLE_ENDIAN) {
    const words = new Uint32Array(view.buffer, view.byteOffset + offset, length / 4);
    for (let i = 0; i < words.length; i += 2) {
      s0 = (s0 + words[i] + s1) >>> 0;
      s1 = (s1 + words[i + 1] + s0) >>> 0;
    }
  } else {
    for (let i = offset; i < offset + length; i += 8) {
      s0 = (s0 + view.getUint32(i, !bigEndian) + s1) >>> 0;
      s1 = (s1 + view.getUint32(i + 4, !bigEndian) + s0) >>> 0;
    }
  }
  sums[0] = s0;
  sums[1] = s1;
}

/**
 * The frames of `wal` SQLite uses, as it reads them: those written since its last reset (the header's
 * salts), each checksum valid (cumulative from the header's), up to the last commit frame; read with the
 * WAL's own page size (which must be `pageSize` when given: the file's). A torn tail (a kill -9 mid-commit,
 * a copy taken during a write) counts no further than SQLite reads. Reads the whole WAL (bounded by the
 * auto-checkpoint: about 4 MB, a few milliseconds) only when one is left, after a crash.
 */
function walCommits(wal: string, pageSize?: number): WalCommits {
  const commits: WalCommits = { pages: new Set(), databasePages: 0, pageSize: 0 };
  let fd: number;
  try {
    fd = openSync(wal, 'r');
  } catch {
    return commits; // no WAL: every page is read from the file
  }
  try {
    const size = fstatSync(fd).size;
    // Its own buffer (not the pool's): 8-byte aligned for the checksum's words.
    const header = Buffer.from(new ArrayBuffer(WAL_HEADER_BYTES));
    if (readSync(fd, header, 0, WAL_HEADER_BYTES, 0) < WAL_HEADER_BYTES) return commits;
    const magic = header.readUInt32BE(0);
    const walPageSize = header.readUInt32BE(8);
    if ((magic & ~1) >>> 0 !== WAL_MAGIC || !validPageSize(walPageSize)) return commits;
    if (pageSize !== undefined && walPageSize !== pageSize) return commits;
    const bigEndian = (magic & 1) === 1;
    const sums = new Uint32Array(2);
    addChecksum(sums, new DataView(header.buffer, header.byteOffset, WAL_HEADER_BYTES), 0, 24, bigEndian);
    // A header whose checksum fails: SQLite uses none of the WAL.
    if (sums[0] !== header.readUInt32BE(24) || sums[1] !== header.readUInt32BE(28)) return commits;
    commits.pageSize = walPageSize;
    const salt1 = header.readUInt32BE(16);
    const salt2 = header.readUInt32BE(20);
    const frameBytes = FRAME_HEADER_BYTES + walPageSize;
    // Its own buffer (not the pool's), so that every frame and page starts 8-byte aligned.
    const frames = new DataView(new ArrayBuffer(frameBytes * FRAMES_A_READ));
    const bytes = new Uint8Array(frames.buffer);
    let uncommitted: number[] = [];
    for (let at = WAL_HEADER_BYTES; at + frameBytes <= size; at += frames.byteLength) {
      const got = readSync(fd, bytes, 0, bytes.length, at);
      for (let f = 0; f + frameBytes <= got; f += frameBytes) {
        // Frames of an earlier generation (before the last reset) carry other salts: SQLite stops there,
        // and at the first frame whose checksum fails (a torn write).
        if (frames.getUint32(f + 8) !== salt1 || frames.getUint32(f + 12) !== salt2) return commits;
        addChecksum(sums, frames, f, 8, bigEndian);
        addChecksum(sums, frames, f + FRAME_HEADER_BYTES, walPageSize, bigEndian);
        if (sums[0] !== frames.getUint32(f + 16) || sums[1] !== frames.getUint32(f + 20)) return commits;
        uncommitted.push(frames.getUint32(f));
        const committedSize = frames.getUint32(f + 4); // non-zero only on a commit's last frame
        if (committedSize !== 0) {
          uncommitted.forEach((p) => commits.pages.add(p));
          uncommitted = [];
          commits.databasePages = committedSize;
        }
      }
    }
    return commits;
  } finally {
    closeSync(fd);
  }
}

/** Page numbers of the frames of `wal` written since its last reset, up to its last commit frame. */
export function pagesInWal(wal: string, pageSize: number): Set<number> {
  return walCommits(wal, pageSize).pages;
}

/** The page size an SQLite database header (its first 100 bytes) gives, or 0 when it is not SQLite's. */
export function pageSizeOf(header: Buffer): number {
  if (!header.subarray(0, 16).equals(SQLITE_MAGIC)) return 0;
  const raw = header.readUInt16BE(16);
  const size = raw === 1 ? 65536 : raw;
  return validPageSize(size) ? size : 0;
}

/** What `cutBeforeOpen` found: why the file is cut short, and whether it is empty while its WAL holds commits. */
export interface Cut {
  why: string;
  /**
   * The file is empty and its WAL holds commits of a database this many bytes long (0 otherwise). SQLite
   * deletes the WAL of an empty file at open: such a file is never opened (the salvage reads the WAL
   * beside a copy made that long).
   */
  walDatabaseBytes: number;
}

/**
 * Whether history.db is cut short, read from the file's header and its WAL's frame headers before SQLite
 * opens it, or null. Before: SQLite refuses a file cut short at its first read as "malformed" (before
 * `damageAtOpen` could say what it is), closing a connection to a file whose WAL holds commits
 * checkpoints them into it (filling a cut with zeros and deleting the WAL: the next open would find a
 * whole file and serve it, the cut's bodies silently gone), and opening an empty file deletes its WAL.
 * Every page SQLite will read from the file must lie inside it; pages whose newest version is in the WAL
 * are read from there, so a file cut short by less than the WAL covers passes (nothing of it is lost).
 * The page size and the database's size come from the WAL when it holds commits (the header may be
 * destroyed, page 1 read from the WAL), else from the header. Null when the size is not known: no commit
 * in the WAL and a header that is not SQLite's (SQLite's open then refuses it, saying so) or whose page
 * count is not valid (an older writer).
 */
export function cutBeforeOpen(file: string): Cut | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null; // no file yet: made by the open
  }
  try {
    const fileBytes = fstatSync(fd).size;
    const header = Buffer.alloc(100);
    const headerBytes = readSync(fd, header, 0, 100, 0);
    const headerPageSize = headerBytes === 100 ? pageSizeOf(header) : 0;
    const wal = walCommits(`${file}-wal`, headerPageSize || undefined);
    const cut = (why: string): Cut => ({ why: `${why}: it was cut short`, walDatabaseBytes: fileBytes === 0 ? wal.databasePages * wal.pageSize : 0 });
    if (fileBytes === 0) return wal.databasePages > 0 ? cut(`it is empty but its WAL holds commits of ${wal.databasePages} pages`) : null;
    let pageSize = headerPageSize;
    let pageCount = 0;
    if (wal.databasePages > 0) {
      pageSize = wal.pageSize;
      pageCount = wal.databasePages;
    } else {
      // Every page is read from the file. A file is either empty (made by the open) or a page long at least.
      if (headerBytes < 100) return cut(`it is ${fileBytes} bytes, shorter than its header`);
      // The header's page count is valid only when written by the writer that bumped the change counter.
      if (pageSize === 0 || header.readUInt32BE(92) !== header.readUInt32BE(24)) return null;
      pageCount = header.readUInt32BE(28);
    }
    if (fileBytes % pageSize !== 0) return cut(`it is ${fileBytes} bytes, not a whole number of ${pageSize}-byte pages`);
    // SQLite never writes the page holding the lock byte at 1 GiB: in neither the file nor the WAL.
    const lockBytePage = Math.floor(LOCK_BYTE_OFFSET / pageSize) + 1;
    let needed = pageCount;
    while (needed > 0 && (wal.pages.has(needed) || needed === lockBytePage)) needed--;
    if (needed * pageSize <= fileBytes) return null;
    return cut(`it is ${fileBytes} bytes but its pages need at least ${needed * pageSize}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Why history.db, just opened as `db` (nothing written yet) and found whole by `cutBeforeOpen`, is
 * damaged, or null: history_meta read whole (every open reads and writes its sync mark there: on a
 * damaged page, found first by that write, the open failed as "could not be opened", --recover too),
 * damage a read met before (noted there), then its newest bodies and its key counter read whole. Its
 * cost does not grow with the file (bench/history.ts): history_meta holds three rows.
 */
export function damageAtOpen(db: SqliteFile): string | null {
  let reading = 'its schema';
  try {
    if (!db.get("SELECT 1 AS present FROM sqlite_master WHERE name = 'bodies'")) return null;
    reading = 'its history_meta';
    // NOT INDEXED: the table's own pages (a key looked up through its index, found absent, reads none of them).
    db.all('SELECT key, value FROM history_meta NOT INDEXED');
    const seen = db.get('SELECT value FROM history_meta WHERE key = ?', [DAMAGE_SEEN_KEY]);
    if (seen) return `a read met damage at ${String(seen.value)}`;
    reading = 'its newest bodies or its key counter';
    db.all('SELECT length(content) + coalesce(length(data), 0) AS n FROM bodies ORDER BY key DESC LIMIT ?', [RECENT_BODIES_CHECKED]);
    // The key counter, which the open reads next (HistoryDb.stats): on a damaged page it threw from the
    // worker as a bare SQLite error, with no word of --recover.
    db.get("SELECT seq FROM sqlite_sequence WHERE name = 'bodies'");
    return null;
  } catch (err) {
    return `reading ${reading} failed: ${err instanceof Error ? err.message : String(err)}`;
  }
}
