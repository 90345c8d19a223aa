// The check of history.db at open (docs/design.md, "History that grows for years", Damage). A full
// `PRAGMA quick_check` reads every page (O(size): minutes for a 10 GB file), so the open checks what is
// cheap and catches the damage seen in practice, a file cut short (a copy interrupted, a file system
// repaired after a crash): every page SQLite will read from the file must lie inside it. Pages whose
// newest version is in the WAL are read from there, so the WAL's frame headers are read (not its pages).
// Damage elsewhere is found when a read meets it; the store then reports it (/health degraded) and notes
// it in the file, so the next open refuses it too.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { Database as SqliteFile } from 'node-sqlite3-wasm';
import { DAMAGE_SEEN_KEY } from './protocol';

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const WAL_MAGIC = 0x377f0682; // the low bit says the checksums' byte order; either is a WAL
/** The newest bodies read whole at open (their pages, overflow included): damage at the file's end shows. */
const RECENT_BODIES_CHECKED = 64;

/** Page numbers of the frames of `wal` written since its last reset, up to its last commit frame. */
function pagesInWal(wal: string, pageSize: number): Set<number> {
  const pages = new Set<number>();
  let fd: number;
  try {
    fd = openSync(wal, 'r');
  } catch {
    return pages; // no WAL: every page is read from the file
  }
  try {
    const size = statSync(wal).size;
    const header = Buffer.alloc(WAL_HEADER_BYTES);
    if (readSync(fd, header, 0, WAL_HEADER_BYTES, 0) < WAL_HEADER_BYTES) return pages;
    if ((header.readUInt32BE(0) & ~1) >>> 0 !== WAL_MAGIC || header.readUInt32BE(8) !== pageSize) return pages;
    const salt1 = header.readUInt32BE(16);
    const salt2 = header.readUInt32BE(20);
    const frame = Buffer.alloc(FRAME_HEADER_BYTES);
    let uncommitted: number[] = [];
    for (let at = WAL_HEADER_BYTES; at + FRAME_HEADER_BYTES + pageSize <= size; at += FRAME_HEADER_BYTES + pageSize) {
      readSync(fd, frame, 0, FRAME_HEADER_BYTES, at);
      // Frames of an earlier generation (before the last reset) carry other salts: SQLite stops there.
      if (frame.readUInt32BE(8) !== salt1 || frame.readUInt32BE(12) !== salt2) break;
      uncommitted.push(frame.readUInt32BE(0));
      if (frame.readUInt32BE(4) !== 0) {
        uncommitted.forEach((p) => pages.add(p));
        uncommitted = [];
      }
    }
    return pages;
  } finally {
    closeSync(fd);
  }
}

/**
 * Why history.db (`file`, `pageCount` pages of `pageSize` bytes as SQLite sees it) is damaged, or null.
 * Counts as in the WAL every frame with the WAL's salts (a superset of those SQLite uses), so a healthy
 * file is never called damaged; a file cut short by less than the WAL covers may pass, and is found
 * at its first read.
 */
function truncationOf(file: string, pageSize: number, pageCount: number): string | null {
  const fileBytes = statSync(file).size;
  if (fileBytes % pageSize !== 0) return `it is ${fileBytes} bytes, not a whole number of ${pageSize}-byte pages: it was cut short`;
  if (pageCount * pageSize <= fileBytes) return null;
  const inWal = pagesInWal(`${file}-wal`, pageSize);
  let needed = pageCount;
  while (needed > 0 && inWal.has(needed)) needed--;
  if (needed * pageSize <= fileBytes) return null;
  return `it is ${fileBytes} bytes but its pages need at least ${needed * pageSize}: it was cut short`;
}

/**
 * Why history.db is cut short where SQLite reads every page from the file (its WAL holds no committed
 * frame: after a clean close it has none), read from the file's header before SQLite reads it: SQLite
 * refuses such a file at its first read as "malformed", before `damageAtOpen` could say what it is.
 * Null when the header's page count is not valid (an older writer) or the WAL has committed frames
 * (SQLite then takes the size from the WAL: damageAtOpen's check).
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
    if (readSync(fd, header, 0, 100, 0) < 100) return null;
    const raw = header.readUInt16BE(16);
    const pageSize = raw === 1 ? 65536 : raw;
    const pageCount = header.readUInt32BE(28);
    // The page count is valid only when written by the writer that bumped the change counter.
    if (header.readUInt32BE(92) !== header.readUInt32BE(24) || pageSize < 512) return null;
    if (pagesInWal(`${file}-wal`, pageSize).size > 0 || pageCount * pageSize <= fileBytes) return null;
    return `it is ${fileBytes} bytes but its pages need ${pageCount * pageSize}: it was cut short`;
  } finally {
    closeSync(fd);
  }
}

/**
 * Why history.db, just opened as `db` (nothing written yet), is damaged, or null: its size against its
 * pages, damage a read met before (noted in history_meta), then its newest bodies read whole. Its cost does not grow with the file (bench/history.ts).
 */
export function damageAtOpen(db: SqliteFile, file: string): string | null {
  const pageSize = Number(db.get('PRAGMA page_size')?.page_size ?? 0);
  const pageCount = Number(db.get('PRAGMA page_count')?.page_count ?? 0);
  const cut = pageCount > 0 ? truncationOf(file, pageSize, pageCount) : null;
  if (cut !== null) return cut;
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
