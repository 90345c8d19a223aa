// Messages between the main thread (history-store.ts) and the history worker (history-worker.ts).
import type { MessageRole } from '../types';

/** How a write refused by a full disk is reported (the journal's words, so clients see one message). */
export const DISK_FULL = 'disk full';

export interface BodyIn {
  conversation_id: string;
  role: MessageRole;
  content: string;
  /** JSON text, or null. */
  data: string | null;
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

export interface HistoryStats {
  /** Bytes of history.db in pages (free pages included). */
  fileBytes: number;
  freePages: number;
  maxKey: number;
}

export type HistoryRequest =
  | { op: 'put'; bodies: BodyIn[] }
  | { op: 'get'; keys: number[] }
  | { op: 'keys'; from: number; to: number }
  | { op: 'remove'; keys: number[] }
  | { op: 'cut'; keys: number[]; keepChars: number; note: string }
  | { op: 'search'; match: string; conversationId: string | null; limit: number }
  | { op: 'vacuum'; pages: number }
  | { op: 'copy'; file: string }
  | { op: 'stats' };

export interface HistoryReplies {
  put: number[];
  get: BodyOut[];
  keys: number[];
  remove: number;
  cut: Array<[number, number]>;
  search: RawSearchHit[];
  vacuum: number;
  copy: null;
  stats: HistoryStats;
}

/** `open` comes first: the worker starts (and compiles SQLite) while the main thread loads sql.js. */
export type WorkerInbound = { open: string } | { id: number; request: HistoryRequest } | { id: number; close: true };

export type WorkerOutbound =
  | { ready: true; stats: HistoryStats }
  | { ready: false; error: string }
  | WorkerAnswer
  /** Answers sent together (a group commit's puts), so their writers continue in the same tick. */
  | { answers: WorkerAnswer[] };

export type WorkerAnswer = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

