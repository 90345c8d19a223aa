// Background work on history.db, in small batches (each a short sql.js statement or transaction on the
// loop; the history.db side runs in its worker): sweep bodies whose message never landed, free the
// bodies of deleted messages, move bodies still inline in sql.js out, apply retention, give freed
// pages back to the file system. Every step is idempotent, so a crash anywhere is finished by the next pass.
import type { Logger } from '../../log/logger';
import { trashConversation, trashMessages } from '../conversations';
import type { Database, WriteTx } from '../database';
import { bodyOf } from '../messages';
import type { MessageRole } from '../types';
import type { HistoryStore } from './history-store';
import type { ColdMeta } from './protocol';
import { hasColdHistory, noteSyncMark } from './restore';
import { referencedBetween } from '../body-refs';
import type { AuditRepo } from '../audit';
import type { UsageRepo } from '../usage';
import type { Blobs } from '../blob-store';
import { collectBlobs } from '../blob-collection';
import type { AttachmentHolds } from '../attachment-holds';

export interface RetentionPolicy {
  /** Conversations with no activity for this many days are deleted. */
  maxDays?: number;
  /** The oldest conversations are deleted while the history holds more than this many bytes. */
  maxBytes?: number;
  /** Tool outputs older than this many days are cut to their beginning and a note. */
  toolOutputDays?: number;
  /** Audit entries older than this many days are dropped (the chain keeps the last one's hash as its anchor). */
  auditMaxDays?: number;
}

export interface MaintenanceOptions {
  logger: Logger;
  /** Between passes (default 10 minutes). */
  intervalMs?: number;
  /** Clock for retention (tests). */
  now?: () => number;
  /** The audit log, pruned by `auditMaxDays`. */
  audit?: Pick<AuditRepo, 'prune'>;
  /** Usage rows, moved out of sql.js with their conversation's metadata. */
  usage?: Pick<UsageRepo, 'moveCold'>;
  /** The blob store whose blobs no row refers to any more are freed after deletions (blob-collection.ts); none: never collected. */
  blobs?: Pick<Blobs, 'collect'>;
  /** Attachments chats waiting in line hold: a retired conversation leaves their rows (dropConversationAttachments). */
  holds?: AttachmentHolds;
  /**
   * Messages whose metadata stays in sql.js: the most recently active conversations' (default
   * DEFAULT_HOT_MESSAGES); the rest moves to history.db (cold.ts).
   */
  hotMessages?: number;
}

/** Rows per batch: one batch is well under a millisecond or two of sql.js work. */
const BATCH = 200;
/** Keys of history.db looked at per step of the sweep. */
const SWEEP_SPAN = 5000;
/** Pages per incremental_vacuum step (4 KiB pages: 8 MiB). */
const VACUUM_PAGES = 2048;
/** A cut tool output keeps this many characters. */
export const CUT_KEEP_CHARS = 400;
/** Tool outputs this small are left whole (cutting would save nothing). */
const CUT_MIN_BYTES = 2048;
const DAY_MS = 86_400_000;
const SWEPT_KEY = 'history.swept_key';
/** Rows moved to history.db per step (one fsync there, one journaled transaction here). */
const COLD_BATCH = 2000;
/** About 2.6 MB of sql.js (some 130 bytes a message), whatever the size of the history. */
export const DEFAULT_HOT_MESSAGES = 20_000;

/** What retention's choice of a conversation reads: the database, or the transaction that deletes it. */
type Reader = Pick<WriteTx, 'get'>;
/**
 * A conversation retention may choose: none with a webhook message waiting in its inbox (accepted, its
 * sender answered 202, not yet admitted into the conversation, so its activity has not moved yet), none
 * of the ids in the JSON array bound to it (in use: `spare`).
 */
const MAY_GO = "NOT EXISTS (SELECT 1 FROM webhook_inbox w WHERE w.status = 'pending' AND w.conversation_id = conversations.id) AND id NOT IN (SELECT value FROM json_each(?))";

interface InlineRow {
  seq: number;
  conversation_id: string;
  role: MessageRole;
  content: string;
  data: string | null;
}

export class HistoryMaintenance {
  private policy: RetentionPolicy = {};
  private inUse: () => readonly string[] = () => [];
  private retired: (conversation: { id: string; source: string }) => void = () => {};
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private swept = false;
  /** A blob collection is owed: at the first pass (what a crash left), then after each deletion. */
  private blobsOwed = true;
  /** Whether the schema has cold rows (migration 18), asked once. */
  private cold: boolean | undefined;

  constructor(
    private readonly db: Database,
    private readonly history: HistoryStore,
    private readonly options: MaintenanceOptions,
  ) {}

  setPolicy(policy: RetentionPolicy): void {
    this.policy = { ...policy };
  }

  /**
   * Conversations retention must not choose now (asked in the transaction that deletes one): those with
   * a turn running or waiting in line (the service's agent), whose activity may not have moved yet (a
   * retry) or whose conversation alone is over max_bytes. They are chosen once their turn has ended.
   */
  spare(inUse: () => readonly string[]): void {
    this.inUse = inUse;
  }

  /** Told of each conversation retention deleted, once that is durable (the service drops what it holds of it and tells the clients). */
  onRetired(retired: (conversation: { id: string; source: string }) => void): void {
    this.retired = retired;
  }

  /** A first pass now, then one every interval. */
  start(): void {
    this.kick();
    this.timer = setInterval(() => this.kick(), this.options.intervalMs ?? 600_000);
    this.timer.unref();
  }

  /** A conversation was deleted (delete_conversation): a pass frees its messages, then its blobs. */
  deleted(): void {
    this.blobsOwed = true;
    this.kick();
  }

  /** Starts a pass (or one more after the running one); failures are logged. */
  kick(): void {
    this.run().catch(() => {});
  }

  /** Resolves when a pass that started after this call has finished. */
  run(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running.then(() => this.running ?? undefined);
    }
    const pass = (async () => {
      try {
        do {
          this.again = false;
          await this.pass();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.options.logger.error('history.maintenance_failed', { error: err instanceof Error ? err.message : String(err) });
        throw err;
      } finally {
        this.running = null;
      }
    })();
    this.running = pass;
    return pass;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => {});
  }

  private async pass(): Promise<void> {
    if (!this.swept) {
      await this.sweepOrphans();
      this.swept = true;
    }
    this.cold ??= hasColdHistory(this.db);
    await this.moveInline();
    await this.applyRetention();
    // Deleted conversations' rows first, so they do not count as sql.js' hot messages below.
    let freed = await this.emptyDeleted();
    if (this.cold) {
      await this.moveCold();
      while (!this.stopped && (await (this.options.usage?.moveCold(noteSyncMark) ?? 0)) > 0) {
        // A batch of rows a step (usage.ts MOVE_BATCH).
      }
    }
    // And those a move met deleted (moveCold), or delete_conversation's cold rows.
    freed += (await this.emptyTrash()) + (await this.emptyDeleted());
    if (freed > 0) await this.vacuum();
    await this.collectBlobs();
  }

  /** When owed (the first pass, or a deletion since the last), the blobs no row refers to any more are freed. */
  private async collectBlobs(): Promise<void> {
    const { blobs, logger } = this.options;
    if (!blobs || !this.blobsOwed || this.stopped) return;
    this.blobsOwed = false;
    try {
      // Left for later while a backup copies the blobs: the next pass collects again.
      if ((await collectBlobs(this.db, blobs, logger, this.options.holds)).deferred) this.blobsOwed = true;
    } catch (err) {
      this.blobsOwed = true;
      throw err;
    }
  }

  /**
   * Bodies stored by an earlier run whose message never landed (a crash between the body's commit and
   * the journal's): keys above the last sweep and below this open's first key, not referenced.
   */
  private async sweepOrphans(): Promise<void> {
    const row = this.db.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [SWEPT_KEY]);
    const end = this.history.keysBeforeOpen;
    let from = (row ? Number(row.value) : 0) + 1;
    if (from > end) return;
    let removed = 0;
    while (from <= end && !this.stopped) {
      const to = Math.min(end, from + SWEEP_SPAN - 1);
      const keys = await this.history.keysBetween(from, to);
      if (keys.length > 0) {
        const referenced = referencedBetween(this.db, from, to);
        const orphans = keys.filter((k) => !referenced.has(k));
        removed += await this.history.remove(orphans);
      }
      from = to + 1;
    }
    if (this.stopped) return;
    await this.db.write((tx) => tx.run('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)', [SWEPT_KEY, String(end)]));
    if (removed > 0) this.options.logger.warn('history.orphans_swept', { bodies: removed });
  }

  /** Bodies still in sql.js (older databases; messages stored with other state in one transaction) go to history.db. */
  private async moveInline(): Promise<void> {
    while (!this.stopped) {
      const rows = this.db.all<InlineRow>('SELECT seq, conversation_id, role, content, data FROM messages WHERE body_key IS NULL ORDER BY seq LIMIT ?', [BATCH]);
      if (rows.length === 0) return;
      // Bodies first: a crash before the update below leaves only unreferenced bodies (swept later).
      const keys = await this.history.put(rows.map((r) => bodyOf(r, r.data)));
      const unused = await this.db.write((tx) =>
        keys.filter((key, i) => tx.run("UPDATE messages SET body_key = ?, content = '', data = NULL WHERE seq = ? AND body_key IS NULL", [key, rows[i].seq]).changes === 0),
      );
      await this.history.remove(unused);
    }
  }

  private async applyRetention(): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    const { maxDays, maxBytes, toolOutputDays, auditMaxDays } = this.policy;
    if (auditMaxDays !== undefined) await this.options.audit?.prune(new Date(now - auditMaxDays * DAY_MS).toISOString());
    if (toolOutputDays !== undefined) await this.cutToolOutputs(new Date(now - toolOutputDays * DAY_MS).toISOString(), toolOutputDays);
    if (maxDays !== undefined) {
      const cutoff = new Date(now - maxDays * DAY_MS).toISOString();
      while (
        !this.stopped &&
        (await this.retire((q) => q.get<{ id: string }>(`SELECT id FROM conversations WHERE updated_at < ? AND ${MAY_GO} ORDER BY updated_at LIMIT 1`, [cutoff, this.inUseJson()])?.id))
      ) {
        // One conversation a step; their messages are freed afterwards (emptyDeleted).
      }
    }
    if (maxBytes !== undefined) {
      const oldestOver = (q: Reader) =>
        (q.get<{ n: number | null }>('SELECT sum(bytes) AS n FROM conversations')?.n ?? 0) > maxBytes
          ? q.get<{ id: string }>(`SELECT id FROM conversations WHERE ${MAY_GO} ORDER BY updated_at, id LIMIT 1`, [this.inUseJson()])?.id
          : undefined;
      while (!this.stopped && (await this.retire(oldestOver))) {
        // A deleted conversation's bytes no longer count at once: the next step chooses the next oldest.
      }
    }
  }

  private inUseJson(): string {
    return JSON.stringify(this.inUse());
  }

  /**
   * Deletes the conversation `pick` chooses (trashConversation: gone from every reader in this one
   * transaction); false when it chooses none. Chosen again inside the transaction: a message stored
   * since the first choice made its conversation active again, and one stored after the transaction is
   * refused (not found), so no acknowledged message is deleted.
   */
  private async retire(pick: (q: Reader) => string | undefined): Promise<boolean> {
    if (pick(this.db) === undefined) return false;
    const retired = await this.db.write((tx) => {
      const id = pick(tx);
      const source = id === undefined ? undefined : tx.get<{ source: string }>('SELECT source FROM conversations WHERE id = ?', [id])?.source;
      return id !== undefined && source !== undefined && trashConversation(tx, id, this.options.holds) ? { id, source } : undefined;
    });
    if (!retired) return false;
    this.blobsOwed = true;
    try {
      this.retired(retired);
    } catch (err) {
      // The deletion stands (durable); a listener's failure must not stop retention's pass at every turn.
      this.options.logger.warn('retention.retired_not_told', { conversation: retired.id, error: err instanceof Error ? err.message : String(err) });
    }
    return true;
  }

  /**
   * Frees the messages of deleted conversations (`history_cold_trash`, noted with the deletion: trashConversation):
   * their rows in sql.js a batch a transaction (bodies to the trash, freed between), then their cold rows
   * in history.db and those rows' bodies; how many bodies. Nothing reads them meanwhile (their
   * conversation's row is gone), and a crash between batches leaves the note, so the next pass goes on.
   */
  private async emptyDeleted(): Promise<number> {
    if (!this.cold) return 0; // no history_cold_trash before migration 18 (nor a deletion: trashConversation)
    let freed = 0;
    while (!this.stopped) {
      const row = this.db.get<{ conversation_id: string }>('SELECT conversation_id FROM history_cold_trash LIMIT 1');
      if (!row) break;
      const id = row.conversation_id;
      while (!this.stopped && (await this.db.write((tx) => trashMessages(tx, 'seq IN (SELECT seq FROM messages WHERE conversation_id = ? ORDER BY seq LIMIT ?)', [id, BATCH]))) > 0) {
        freed += await this.emptyTrash();
      }
      for (let n = -1; n !== 0 && !this.stopped; freed += n) n = await this.history.dropCold(id, COLD_BATCH);
      if (this.stopped) break;
      await this.db.write((tx) => tx.run('DELETE FROM history_cold_trash WHERE conversation_id = ?', [id]));
    }
    return freed;
  }

  /**
   * Once sql.js holds the metadata of more than `hotMessages` messages, that of the least recently
   * active conversations moves to history.db, oldest rows first, down to 90% of it: sql.js (all in
   * memory) then holds what recent conversations stored, whatever the size of the history. Per batch:
   * the rows are committed in history.db with an fsync and a new sync mark, then one sql.js transaction
   * deletes them, raises the conversation's `cold_seq` and notes the mark (a history.db that later lost
   * them is damage: restore.ts). A crash between leaves them in both, sql.js's copy counting (reads ask
   * history.db only up to `cold_seq`), and the next pass moves them again (INSERT OR REPLACE).
   */
  private async moveCold(): Promise<void> {
    const budget = this.options.hotMessages ?? DEFAULT_HOT_MESSAGES;
    const hotRows = () => this.db.get<{ n: number }>('SELECT count(*) AS n FROM messages')?.n ?? 0;
    if (hotRows() <= budget) return;
    const target = Math.floor(budget * 0.9);
    while (!this.stopped) {
      const excess = hotRows() - target;
      if (excess <= 0) return;
      const c = this.db.get<{ id: string }>('SELECT id FROM conversations WHERE hot = 1 ORDER BY updated_at, id LIMIT 1');
      if (!c) return;
      const rows = this.db.all<ColdMeta & { body_key: number | null }>(
        'SELECT seq, id, conversation_id, role, timestamp, tool_name, user_id, client_key, body_key, bytes, cut FROM messages WHERE conversation_id = ? ORDER BY seq LIMIT ?',
        [c.id, Math.min(COLD_BATCH, excess)],
      );
      // Only rows whose body is in history.db, and a prefix, so every cold row comes before every row left.
      // Not one whose body is held in memory (owed: its put refused): its journal record is its only
      // durable copy, and the open puts back only bodies service.db refers to, so once its row had moved
      // a restart lost it. Every body given before is answered first (owed, or written: putCold's fsync
      // then makes it durable).
      await this.history.answered();
      const inline = rows.findIndex((r) => r.body_key === null || this.history.holds(r.body_key));
      const movable = (inline === -1 ? rows : rows.slice(0, inline)) as ColdMeta[];
      if (rows.length > 0 && movable.length === 0) return; // bodies still inline (moveInline) or owed: a later pass
      const mark = movable.length > 0 ? await this.history.putCold(movable) : 0;
      const last = movable.length > 0 ? movable[movable.length - 1].seq : 0;
      await this.db.write((tx) => {
        const removed = tx.run('DELETE FROM messages WHERE conversation_id = ? AND seq <= ?', [c.id, last]).changes;
        const moved = tx.run('UPDATE conversations SET cold_seq = max(cold_seq, ?), cold_count = cold_count + ?, hot = EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?) WHERE id = ?', [
          last,
          removed,
          c.id,
          c.id,
        ]);
        // Deleted meanwhile: what was just moved goes with it.
        if (moved.changes === 0 && last > 0) tx.run('INSERT OR IGNORE INTO history_cold_trash (conversation_id) VALUES (?)', [c.id]);
        if (mark > 0) noteSyncMark(tx, mark);
      });
    }
  }

  private async cutToolOutputs(cutoff: string, days: number): Promise<void> {
    const note = `\n… [cut: tool output older than ${days} days]`;
    // Cold rows (history.db) first, all in the worker; then the conversations' byte totals here. A
    // crash between leaves those totals too high by what was cut (retention by bytes then deletes early).
    while (!this.stopped) {
      const { rows, deltas } = await this.history.cutCold(cutoff, CUT_KEEP_CHARS, note, CUT_MIN_BYTES, BATCH);
      if (deltas.length > 0) await this.db.write((tx) => deltas.forEach(([id, delta]) => tx.run('UPDATE conversations SET bytes = max(0, bytes - ?) WHERE id = ?', [delta, id])));
      if (rows === 0) break;
    }
    while (!this.stopped) {
      const rows = this.db.all<{ seq: number; body_key: number | null; bytes: number; conversation_id: string }>(
        "SELECT seq, body_key, bytes, conversation_id FROM messages WHERE role = 'tool' AND cut = 0 AND timestamp < ? ORDER BY timestamp LIMIT ?",
        [cutoff, BATCH],
      );
      if (rows.length === 0) return;
      const big = rows.filter((r) => r.body_key !== null && r.bytes >= CUT_MIN_BYTES);
      // history.db first: a crash before the update below leaves bodies cut but not marked, and cutting
      // again changes nothing (history.db skips bodies already cut).
      const cut = await this.history.cut(
        big.map((r) => r.body_key!),
        CUT_KEEP_CHARS,
        note,
      );
      const sizes = new Map(cut.sizes);
      await this.db.write((tx) => {
        // Bodies not yet in history.db: their cut copies journaled, so a restart puts them back cut.
        tx.keepBodies(cut.held);
        for (const r of rows) {
          const bytes = r.body_key === null ? r.bytes : (sizes.get(r.body_key) ?? r.bytes);
          // `cut` = retention is done with it (small ones are left whole).
          tx.run('UPDATE messages SET cut = 1, bytes = ? WHERE seq = ?', [bytes, r.seq]);
          if (bytes !== r.bytes) tx.run('UPDATE conversations SET bytes = bytes - ? WHERE id = ?', [r.bytes - bytes, r.conversation_id]);
        }
      });
    }
  }

  /** Frees the bodies of deleted messages; how many. */
  private async emptyTrash(): Promise<number> {
    let freed = 0;
    while (!this.stopped) {
      const keys = this.db.all<{ body_key: number }>('SELECT body_key FROM history_trash LIMIT ?', [BATCH * 5]).map((r) => r.body_key);
      if (keys.length === 0) break;
      freed += await this.history.remove(keys);
      await this.db.write((tx) => tx.run(`DELETE FROM history_trash WHERE body_key IN (${keys.map(() => '?').join(', ')})`, keys));
    }
    return freed;
  }

  private async vacuum(): Promise<void> {
    while (!this.stopped && (await this.history.vacuum(VACUUM_PAGES)) > 0) {
      // Each step is one short history.db transaction; reads and writes get the worker in between.
    }
  }
}
