// Messages between the main thread (history-store.ts) and the history worker (history-worker.ts).
import type { MessagePort } from 'node:worker_threads';
import type { MessageRole } from '../types';
import { firstCodePoints } from '../../protocol/code-points';

/** How a write refused by a full disk is reported (the journal's words, so clients see one message). */
export const DISK_FULL = 'disk full';

/**
 * SQLite's words for a page that is not what it should be (SQLITE_CORRUPT, a file cut short; SQLITE_NOTADB:
 * page 1, the header, destroyed).
 */
export const CORRUPT = /malformed|SQLITE_CORRUPT|database corruption|file is not a database|SQLITE_NOTADB/i;

/** history_meta's key for damage a read met: the next open treats the file as damaged (integrity.ts). */
export const DAMAGE_SEEN_KEY = 'damage_seen';

export interface BodyIn {
  conversation_id: string;
  role: MessageRole;
  content: string;
  /** JSON text, or null. */
  data: string | null;
}

/** A body's size in characters (its text and data), what the memory holding it is counted by. */
export function bodyChars(b: Pick<BodyIn, 'content' | 'data'>): number {
  return b.content.length + (b.data?.length ?? 0);
}

/**
 * A body cut by retention, as history-db.ts `cut` makes it in SQL (`substr(content, 1, keepChars) || note`):
 * its first `keepChars` characters, counted as SQLite counts them (code points), then `note`.
 */
export function cutText(content: string, keepChars: number, note: string): string {
  return firstCodePoints(content, keepChars) + note;
}

/** A body stored under a given key (history-db.ts `fill`). */
export interface KeyedBody extends BodyIn {
  key: number;
  cut?: boolean;
}

/** A body a message refers to, for rebuilding a damaged history.db (`serve --recover`). */
export interface BodyRef {
  key: number;
  conversation_id: string;
  role: BodyIn['role'];
}

export interface SalvageResult {
  /** Where the damaged file (and its WAL) was kept. */
  aside: string;
  /** Bodies read back from it, and those lost (stored as a placeholder). */
  kept: number;
  lost: number;
  /** The highest key the rebuild gives out after (`above`, or the damaged file's counter where it could be read). */
  maxKey: number;
}

export interface BodyOut {
  key: number;
  content: string;
  data: string | null;
  /** Cut to a summary by retention (history.tool_output_days). */
  cut: boolean;
}

export interface RawSearchHit {
  key: number;
  /** With MARK_OPEN / MARK_CLOSE around each match. */
  snippet: string;
}

/** The sync mark history.db held when opened, and the one its open made durable (history-db.ts). */
export interface SyncMarks {
  before: number;
  now: number;
}

export interface HistoryStats {
  /** Bytes of history.db in pages (free pages included). */
  fileBytes: number;
  freePages: number;
  maxKey: number;
  /** fsync calls the worker's file layer made since it started (sync-count.ts). */
  syncs: number;
}

/** A message's metadata moved to history.db once its conversation went idle (cold.ts). */
export interface ColdMeta {
  seq: number;
  id: string;
  conversation_id: string;
  role: MessageRole;
  timestamp: string;
  tool_name: string | null;
  user_id: string | null;
  client_key: string | null;
  body_key: number;
  bytes: number;
  cut: number;
}

/** A usage row moved to history.db with its conversation (store/usage.ts UsageRow; kept as JSON). */
export interface ColdUsage {
  message_id: string;
  conversation_id: string;
  [column: string]: unknown;
}

/** A cold message (its body asked for by `body_key`). */
export interface ColdRow extends ColdMeta {
  /** For a `turn` query: the turn's next user message is cold too, so the turn ended among the cold rows. */
  ended?: boolean;
}

/** Reads of cold rows (cold.ts `queryCold`); `maxSeq` is the conversation's `cold_seq` in sql.js. */
export type ColdQuery =
  | { kind: 'recent'; conversationId: string; maxSeq: number; limit: number; includeTools: boolean }
  | { kind: 'after'; conversationId: string; seq: number; maxSeq: number }
  | { kind: 'id'; id: string }
  | { kind: 'client_key'; clientKey: string }
  | { kind: 'turn'; conversationId: string; seq: number; maxSeq: number }
  | { kind: 'user_before'; conversationId: string; seq: number; maxSeq: number }
  | { kind: 'body_keys'; keys: number[] };

export interface ColdCutResult {
  /** Rows looked at (0: none left). */
  rows: number;
  /** Bytes each conversation lost, for its row in sql.js. */
  deltas: Array<[string, number]>;
}

/** history_meta's key for the count of syncs (history-db.ts `sync`), which service.db keeps too (restore.ts). */
export const SYNC_MARK_KEY = 'sync_mark';

export type HistoryRequest =
  /** Under keys given by the main thread. `durable`: committed with an fsync; otherwise written, durable once the journal record holding them is (record.ts). */
  | { op: 'put'; bodies: KeyedBody[]; durable: boolean }
  | { op: 'sync' }
  | { op: 'get'; keys: number[] }
  | { op: 'fill'; bodies: KeyedBody[]; above: number }
  /**
   * `journaled`: bodies the journal still holds, for those the damaged file cannot give; `mark`: the sync
   * mark service.db saw (restore.ts), which the rebuild's marks go on from.
   */
  | { op: 'salvage'; refs: BodyRef[]; placeholder: string; above: number; journaled: KeyedBody[]; mark: number }
  | { op: 'keys'; from: number; to: number }
  | { op: 'remove'; keys: number[] }
  | { op: 'cut'; keys: number[]; keepChars: number; note: string }
  | { op: 'search'; match: string; conversationId: string | null; limit: number }
  | { op: 'vacuum'; pages: number }
  | { op: 'copy'; file: string }
  | { op: 'stats' }
  | { op: 'coldPut'; rows: ColdMeta[] }
  | { op: 'cold'; query: ColdQuery }
  | { op: 'coldUsagePut'; rows: ColdUsage[] }
  | { op: 'coldCount'; conversations: Array<[string, number]> }
  | { op: 'coldUsage'; messageIds: string[] }
  | { op: 'coldDrop'; conversationId: string; limit: number }
  | { op: 'coldCut'; cutoff: string; keepChars: number; note: string; minBytes: number; limit: number };

export interface HistoryReplies {
  put: null;
  sync: number;
  get: BodyOut[];
  fill: number;
  salvage: SalvageResult;
  keys: number[];
  remove: number;
  cut: Array<[number, number]>;
  search: RawSearchHit[];
  vacuum: number;
  copy: null;
  stats: HistoryStats;
  coldPut: number;
  cold: ColdRow[];
  coldUsagePut: number;
  coldCount: Array<[string, number]>;
  coldUsage: ColdUsage[];
  coldDrop: number;
  coldCut: ColdCutResult;
}

/**
 * `prepare` may come first, as soon as the file is known (before the data directory is locked): when
 * there is no such file, the worker builds a new one's bytes meanwhile (history-db.ts newHistoryFileBytes).
 * `open` comes next: the worker starts (and compiles SQLite) while the main thread loads sql.js, and
 * opens and checks the file without writing to it. `begin` follows once the data directory may be
 * changed (service.db opened): true makes the open's writes and answers `ready`, false closes the file.
 */
export type WorkerInbound =
  | { prepare: string }
  | { open: string; recover: boolean }
  | { begin: boolean }
  | { id: number; request: HistoryRequest }
  | { id: number; close: true }
  /** A channel of its own over a scratch database in memory (HistoryStore.scratch): requests on it never touch history.db. */
  | { practise: MessagePort };

export type WorkerOutbound =
  /** `salvageUndone`: a salvage cut short was undone before the open (salvage-aside.ts). */
  | { ready: true; stats: HistoryStats; damage: string | null; marks: SyncMarks; salvageUndone: boolean }
  | { ready: false; error: string }
  | WorkerAnswer
  /** Answers sent together (a group commit's puts), so their writers continue in the same tick. */
  | { answers: WorkerAnswer[] };

export type WorkerAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };
