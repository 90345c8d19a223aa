// Start-up replay of the journal, and what to do with bytes that are not records: a torn tail (a crash
// mid-write) is dropped; damage followed by committed records stops the start, or with `recover`, is
// set aside while every readable record is kept.
import { constants } from 'node:fs';
import { copyFile, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Database as SqlJsDatabase } from 'sql.js';
import type { Logger } from '../log/logger';
import { scanRecords, voidedSeqs } from './record';
import type { DamagedRange, ScannedRecords } from './record';
import type { KeyedBody } from './history/protocol';
import { fsyncDir, listSegments, replayRecords } from './replay';
import { PRIVATE_FILE_MODE } from '../platform/file-modes';
import type { SegmentFile } from './replay';
import type { StatementCache } from './statements';

export interface LiveSegment {
  n: number;
  path: string;
  /** Valid bytes (after any truncation). */
  size: number;
  /** Seq of its last record, 0 when empty. */
  maxSeq: number;
}

export interface RecoveryResult {
  /** Highest seq in the snapshot or the journal. */
  lastSeq: number;
  /** Segments left in place, oldest first. */
  segments: LiveSegment[];
  /** Highest segment number seen, including set-aside ones (new segments are numbered above it). */
  maxN: number;
  applied: number;
  droppedBytes: number;
  /** The history.db bodies journaled by records after the snapshot (record.ts), in order. */
  bodies: KeyedBody[];
}

/** A journal segment holds bad bytes with committed records after them; nothing was changed. */
export class JournalDamagedError extends Error {
  constructor(
    readonly file: string,
    readonly range: DamagedRange,
  ) {
    super(
      `journal segment ${file} is damaged at byte ${range.offset} (${range.problem}; ${range.length} bytes) ` +
        'and committed records follow the damage, so the store was not opened and nothing was changed. ' +
        'To start anyway, run `remote-assistant serve --recover`: it keeps a copy of the damaged segment ' +
        `(${path.basename(file)}.damaged-<time>) and replays every readable record before and after the damage.`,
    );
    this.name = 'JournalDamagedError';
  }
}

interface Scanned {
  file: SegmentFile;
  buf: Buffer;
  afterSeq: number;
  scan: ScannedRecords;
}

async function scanSegments(files: SegmentFile[]): Promise<Scanned[]> {
  const out: Scanned[] = [];
  let prev = 0;
  for (const file of files) {
    const buf = await readFile(file.path);
    const scan = scanRecords(buf, prev);
    out.push({ file, buf, afterSeq: prev, scan });
    if (scan.records.length > 0) prev = scan.records[scan.records.length - 1].seq;
  }
  return out;
}

/** Bad ranges that lie before a committed record (in their segment or a later one). */
function damageOf(scanned: Scanned[]): { index: number; ranges: DamagedRange[] }[] {
  let lastWithRecords = -1;
  scanned.forEach((s, i) => {
    if (s.scan.records.length > 0) lastWithRecords = i;
  });
  const out: { index: number; ranges: DamagedRange[] }[] = [];
  scanned.forEach((s, i) => {
    const ranges = [...s.scan.damaged];
    if (s.scan.tail && i < lastWithRecords) ranges.push(s.scan.tail);
    if (ranges.length > 0) out.push({ index: i, ranges });
  });
  return out;
}

/** `buf` without `ranges` (and without its torn tail): the segment's readable records, bytes as written. */
function withoutRanges(buf: Buffer, ranges: DamagedRange[], tail: DamagedRange | undefined): Buffer {
  const cut = [...ranges, ...(tail && !ranges.includes(tail) ? [tail] : [])].sort((a, b) => a.offset - b.offset);
  const parts: Buffer[] = [];
  let pos = 0;
  for (const r of cut) {
    parts.push(buf.subarray(pos, r.offset));
    pos = r.offset + r.length;
  }
  parts.push(buf.subarray(pos));
  return Buffer.concat(parts);
}

async function writeDurably(file: string, data: Buffer): Promise<void> {
  const fh = await open(file, 'wx', PRIVATE_FILE_MODE);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Keeps a copy of the damaged segment (`.damaged-<time>`) and replaces the segment with its readable
 * records. The copy is made before the replacement, and the replacement is a rename: a crash at any
 * point leaves either the original segment or the cleaned one in place.
 */
async function setAside(dir: string, s: Scanned, ranges: DamagedRange[], logger: Logger): Promise<Buffer> {
  const aside = `${s.file.path}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const clean = withoutRanges(s.buf, ranges, s.scan.tail);
  const tmp = `${s.file.path}.recovering`;
  await copyFile(s.file.path, aside, constants.COPYFILE_EXCL);
  const copy = await open(aside, 'r+');
  try {
    await copy.chmod(PRIVATE_FILE_MODE);
    await copy.sync();
  } finally {
    await copy.close();
  }
  await rm(tmp, { force: true }); // left by an interrupted recovery, before it replaced anything
  await writeDurably(tmp, clean);
  await rename(tmp, s.file.path);
  await fsyncDir(dir);
  logger.warn('store.journal_recovered', {
    segment: path.basename(s.file.path),
    kept_aside: path.basename(aside),
    damaged: ranges.map((r) => ({ offset: r.offset, bytes: r.length, problem: r.problem })),
    lost_bytes: s.buf.length - clean.length,
  });
  return clean;
}

/**
 * Start-up replay: applies every record after `snapshotSeq`, in order. Bad bytes with committed
 * records after them are damage: without `recover` this throws JournalDamagedError before changing
 * anything; with it, each damaged segment is set aside and its readable records kept. Bad bytes at the
 * very end (a torn tail) are truncated; segments after a torn tail hold no record and are renamed aside
 * (`.discarded`).
 */
export async function recoverJournal(
  db: SqlJsDatabase,
  cache: StatementCache,
  opts: { dir: string; fileName: string; snapshotSeq: number; logger: Logger; recover?: boolean },
): Promise<RecoveryResult> {
  const { dir, fileName, snapshotSeq, logger } = opts;
  const files = await listSegments(dir, fileName);
  const scanned = await scanSegments(files);

  const damage = damageOf(scanned);
  if (damage.length > 0 && !opts.recover) {
    throw new JournalDamagedError(scanned[damage[0].index].file.path, damage[0].ranges[0]);
  }
  for (const { index, ranges } of damage) {
    const s = scanned[index];
    const clean = await setAside(dir, s, ranges, logger);
    scanned[index] = { ...s, buf: clean, scan: scanRecords(clean, s.afterSeq) };
  }

  const segments: LiveSegment[] = [];
  let lastSeq = snapshotSeq;
  let applied = 0;
  let droppedBytes = 0;
  let gapReported = false;
  const bodies: KeyedBody[] = [];
  for (let i = 0; i < scanned.length; i++) {
    const { file, buf, scan } = scanned[i];
    const first = scan.records.find((r) => r.seq > lastSeq);
    if (first && first.seq !== lastSeq + 1 && !gapReported) {
      gapReported = true;
      logger.warn('store.journal_gap', { segment: path.basename(file.path), expected_seq: lastSeq + 1, found_seq: first.seq });
    }
    const result = replayRecords(db, cache, scan.records, lastSeq);
    for (const failure of result.failures) {
      logger.error('store.replay_record_failed', { seq: failure.seq, error: failure.message });
    }
    applied += result.applied;
    lastSeq = result.lastSeq;
    const voided = voidedSeqs(scan.records);
    for (const record of scan.records) if (record.seq > snapshotSeq && record.bodies && !voided.has(record.seq)) bodies.push(...record.bodies);
    const maxSeq = scan.records.length > 0 ? scan.records[scan.records.length - 1].seq : 0;
    segments.push({ n: file.n, path: file.path, size: scan.validBytes, maxSeq });

    if (scan.tail) {
      // Nothing committed follows (else it was damage, above): a crash mid-write left this.
      droppedBytes += scan.tail.length;
      logger.warn('store.journal_truncated', {
        segment: path.basename(file.path),
        reason: scan.tail.problem,
        valid_bytes: scan.validBytes,
        dropped_bytes: buf.length - scan.validBytes,
      });
      const fh = await open(file.path, 'r+');
      try {
        await fh.truncate(scan.validBytes);
        await fh.sync();
      } finally {
        await fh.close();
      }
      const later = files.slice(i + 1);
      for (const rest of later) {
        const size = (await stat(rest.path)).size;
        droppedBytes += size;
        await rename(rest.path, `${rest.path}.discarded-${Date.now()}`);
        logger.warn('store.journal_segment_discarded', { segment: path.basename(rest.path), dropped_bytes: size });
      }
      if (later.length > 0) await fsyncDir(dir);
      break;
    }
  }
  return { lastSeq, segments, maxN: files.length > 0 ? files[files.length - 1].n : 0, applied, droppedBytes, bodies };
}
