// The check of history.db at open (docs/design.md, "History that grows for years", Damage). A full
// `PRAGMA quick_check` reads every page (O(size): minutes for a 10 GB file), so the open checks what is
// cheap and catches the damage seen in practice, a file cut short (a copy interrupted, a file system
// repaired after a crash): every page SQLite will read from the file must lie inside it. Pages whose
// newest version is in the WAL are read from there, so the WAL's frame headers are read (not its pages),
// all before SQLite opens the file (its close would checkpoint the WAL into it). Damage elsewhere is found when a read meets it; the store then reports it (/health degraded) and notes
// it in the file, so the next open refuses it too.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { Database as SqliteFile } from 'node-sqlite3-wasm';
import { DAMAGE_SEEN_KEY } from './protocol';

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const WAL_MAGIC = 0x377f0682; // the low bit says the checksums' byte order; either is a WAL
/** The newest bodies read whole at open (their pages, overflow included): damage at the file's end shows. */
const RECENT_BODIES_CHECKED = 64;

/** What a WAL holds: its pages (as `pagesInWal`) and the database's size in pages at its last commit (0: none). */
interface WalCommits {
  pages: Set<number>;
  databasePages: number;
}

/**
 * The frames of `wal` written since its last reset, up to its last commit frame. Counts every frame with
 * the WAL's salts (a superset of those SQLite uses: it also checks their checksums).
 */
function walCommits(wal: string, pageSize: number): WalCommits {
  const commits: WalCommits = { pages: new Set(), databasePages: 0 };
  let fd: number;
  try {
    fd = openSync(wal, 'r');
  } catch {
    return commits; // no WAL: every page is read from the file
  }
  try {
    const size = statSync(wal).size;
    const header = Buffer.alloc(WAL_HEADER_BYTES);
    if (readSync(fd, header, 0, WAL_HEADER_BYTES, 0) < WAL_HEADER_BYTES) return commits;
    if ((header.readUInt32BE(0) & ~1) >>> 0 !== WAL_MAGIC || header.readUInt32BE(8) !== pageSize) return commits;
    const salt1 = header.readUInt32BE(16);
    const salt2 = header.readUInt32BE(20);
    const frame = Buffer.alloc(FRAME_HEADER_BYTES);
    let uncommitted: number[] = [];
    for (let at = WAL_HEADER_BYTES; at + FRAME_HEADER_BYTES + pageSize <= size; at += FRAME_HEADER_BYTES + pageSize) {
      readSync(fd, frame, 0, FRAME_HEADER_BYTES, at);
      // Frames of an earlier generation (before the last reset) carry other salts: SQLite stops there.
      if (frame.readUInt32BE(8) !== salt1 || frame.readUInt32BE(12) !== salt2) break;
      uncommitted.push(frame.readUInt32BE(0));
      const committedSize = frame.readUInt32BE(4); // non-zero only on a commit's last frame
      if (committedSize !== 0) {
        uncommitted.forEach((p) => commits.pages.add(p));
        uncommitted = [];
        commits.databasePages = committedSize;
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

/**
 * Why history.db is cut short, read from the file's header and its WAL's frame headers before SQLite
 * opens it, or null. Before: SQLite refuses a file cut short at its first read as "malformed" (before
 * `damageAtOpen` could say what it is), and when its WAL holds commits, closing the refused file
 * checkpoints them into it, filling the cut with zeros and deleting the WAL: the next open would find a
 * whole file and serve it, the cut's bodies silently gone. Every page SQLite will read from the file
 * must lie inside it; pages whose newest version is in the WAL are read from there, so a file cut short
 * by less than the WAL covers passes (nothing of it is lost). Null when the size is not known: no
 * commit in the WAL and the header's page count not valid (an older writer).
 */
export function cutBeforeOpen(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return null; // no file yet: made by the open
  }
  try {
    const fileBytes = statSync(file).size;
    const header = Buffer.alloc(100);
    // Shorter than SQLite's header (a file is either empty, made by the open, or at least a page long).
    if (readSync(fd, header, 0, 100, 0) < 100) return fileBytes === 0 ? null : `it is ${fileBytes} bytes, shorter than its header: it was cut short`;
    const raw = header.readUInt16BE(16);
    const pageSize = raw === 1 ? 65536 : raw;
    // Not an SQLite header (destroyed, or not a database): SQLite's open refuses it, saying so.
    if (!header.subarray(0, 16).equals(SQLITE_MAGIC) || pageSize < 512 || (pageSize & (pageSize - 1)) !== 0) return null;
    if (fileBytes % pageSize !== 0) return `it is ${fileBytes} bytes, not a whole number of ${pageSize}-byte pages: it was cut short`;
    const wal = walCommits(`${file}-wal`, pageSize);
    // The size SQLite takes: its WAL's last commit's, else the header's, valid only when written by the
    // writer that bumped the change counter.
    let pageCount = wal.databasePages;
    if (pageCount === 0) {
      if (header.readUInt32BE(92) !== header.readUInt32BE(24)) return null;
      pageCount = header.readUInt32BE(28);
    }
    let needed = pageCount;
    while (needed > 0 && wal.pages.has(needed)) needed--;
    if (needed * pageSize <= fileBytes) return null;
    return `it is ${fileBytes} bytes but its pages need at least ${needed * pageSize}: it was cut short`;
  } finally {
    closeSync(fd);
  }
}

/**
 * Why history.db, just opened as `db` (nothing written yet) and found whole by `cutBeforeOpen`, is
 * damaged, or null: damage a read met before (noted in history_meta), then its newest bodies read
 * whole. Its cost does not grow with the file (bench/history.ts).
 */
export function damageAtOpen(db: SqliteFile): string | null {
  try {
    if (!db.get("SELECT 1 AS present FROM sqlite_master WHERE name = 'bodies'")) return null;
    const seen = db.get('SELECT value FROM history_meta WHERE key = ?', [DAMAGE_SEEN_KEY]);
    if (seen) return `a read met damage at ${String(seen.value)}`;
    db.all('SELECT length(content) + coalesce(length(data), 0) AS n FROM bodies ORDER BY key DESC LIMIT ?', [RECENT_BODIES_CHECKED]);
    return null;
  } catch (err) {
    return `reading its newest bodies failed: ${err instanceof Error ? err.message : String(err)}`;
  }
}
