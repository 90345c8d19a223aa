import { wellFormed } from '../protocol/code-points';
import type { AuditRepo, NewAuditEntry } from './audit';
import type { Database } from './database';

/**
 * What a turn did to files, for undo_turn (docs/protocol.md, "Undoing a turn"). A `file` row is one
 * write of the agent: the file's before-image (`before_hash`, a blob; null when the file did not exist)
 * and the bytes it wrote (`after_hash`, a blob). An `unrecorded` row is a tool call whose effects are
 * not recorded (run_command, custom and MCP tools): listed as not reversible.
 *
 * States of a `file` row: `pending` (journaled before the write; settled at the next start if the
 * service died before `done`), `done` (written), `changed` (settled after a crash with the file neither
 * before nor after: nothing is restored), `undone` (restored by an undo).
 */
export type FileChangeState = 'pending' | 'done' | 'changed' | 'undone';

export interface FileChangeRow {
  seq: number;
  id: string;
  conversation_id: string;
  turn_id: string;
  kind: 'file' | 'unrecorded';
  tool: string;
  /** The real path of the workspace root, and the file's path relative to it with `/` separators. */
  root: string | null;
  path: string | null;
  before_hash: string | null;
  after_hash: string | null;
  /** `unrecorded`: what ran (a command line); `file`: null. */
  detail: string | null;
  state: FileChangeState;
  created_at: string;
  undone_at: string | null;
}

export interface NewFileWrite {
  id: string;
  conversation_id: string;
  turn_id: string;
  tool: string;
  root: string;
  path: string;
  before_hash: string | null;
  after_hash: string;
}

export interface TurnChangesSummary {
  turn_id: string;
  files: number;
  not_reversible: number;
  /** Every file of the turn was restored by an undo. */
  undone: boolean;
}

const COLUMNS = 'seq, id, conversation_id, turn_id, kind, tool, root, path, before_hash, after_hash, detail, state, created_at, undone_at';

export class FileChangesRepo {
  constructor(
    private readonly db: Database,
    private readonly audit: Pick<AuditRepo, 'record'>,
  ) {}

  /** Journals a write about to happen (its blobs are already stored), as `pending`. */
  async begin(write: NewFileWrite): Promise<void> {
    await this.db.write((tx) =>
      tx.run(`INSERT INTO file_changes (id, conversation_id, turn_id, kind, tool, root, path, before_hash, after_hash, state, created_at) VALUES (?, ?, ?, 'file', ?, ?, ?, ?, ?, 'pending', ?)`, [
        write.id,
        write.conversation_id,
        write.turn_id,
        write.tool,
        write.root,
        write.path,
        write.before_hash,
        write.after_hash,
        new Date().toISOString(),
      ]),
    );
  }

  /** The write of a pending row happened (`done`), or, settled after a crash, left the file as neither (`changed`). */
  async settle(id: string, state: 'done' | 'changed'): Promise<void> {
    await this.db.write((tx) => tx.run(`UPDATE file_changes SET state = ? WHERE id = ? AND state = 'pending'`, [state, id]));
  }

  /** The write of a pending row did not happen: it leaves no record. */
  async drop(id: string): Promise<void> {
    await this.db.write((tx) => tx.run(`DELETE FROM file_changes WHERE id = ? AND state = 'pending'`, [id]));
  }

  /**
   * A tool call whose effects are not recorded (listed as not reversible); its tool's name (an MCP server's
   * tool, named by the server) and detail (a command line the model wrote) stored well-formed, as a message's text.
   */
  async recordUnrecorded(entry: { id: string; conversation_id: string; turn_id: string; tool: string; detail: string }): Promise<void> {
    await this.db.write((tx) =>
      tx.run(`INSERT INTO file_changes (id, conversation_id, turn_id, kind, tool, detail, state, created_at) VALUES (?, ?, ?, 'unrecorded', ?, ?, 'done', ?)`, [
        entry.id,
        entry.conversation_id,
        entry.turn_id,
        wellFormed(entry.tool),
        wellFormed(entry.detail),
        new Date().toISOString(),
      ]),
    );
  }

  /** Files restored by an undo, in one transaction with the undo's audit entry. */
  async markUndone(ids: readonly string[], audit?: NewAuditEntry): Promise<void> {
    if (ids.length === 0 && !audit) return;
    const at = new Date().toISOString();
    await this.db.write((tx) => {
      for (const id of ids) tx.run(`UPDATE file_changes SET state = 'undone', undone_at = ? WHERE id = ? AND state = 'done'`, [at, id]);
      if (audit) this.audit.record(tx, audit);
    });
  }

  pending(): FileChangeRow[] {
    return this.db.all<FileChangeRow>(`SELECT ${COLUMNS} FROM file_changes WHERE state = 'pending' ORDER BY seq`);
  }

  /** Every row of a turn, in the order written. */
  ofTurn(conversationId: string, turnId: string): FileChangeRow[] {
    return this.db.all<FileChangeRow>(`SELECT ${COLUMNS} FROM file_changes WHERE conversation_id = ? AND turn_id = ? ORDER BY seq`, [conversationId, turnId]);
  }

  /** Whether any write of the same file after `seq` (any turn, any conversation) still stands (not undone). */
  writtenAfter(root: string, path: string, seq: number): boolean {
    return this.db.get(`SELECT 1 AS x FROM file_changes WHERE root = ? AND path = ? AND seq > ? AND kind = 'file' AND state != 'undone' LIMIT 1`, [root, path, seq]) !== undefined;
  }

  /** The turns of a conversation that changed files or ran unrecorded tools, oldest first. */
  turns(conversationId: string): TurnChangesSummary[] {
    const rows = this.db.all<{ turn_id: string; files: number; unrecorded: number; standing: number }>(
      `SELECT turn_id, count(DISTINCT CASE WHEN kind = 'file' THEN root || '/' || path END) AS files, sum(kind = 'unrecorded') AS unrecorded,
         sum(kind = 'file' AND state != 'undone') AS standing
       FROM file_changes WHERE conversation_id = ? GROUP BY turn_id ORDER BY min(seq)`,
      [conversationId],
    );
    return rows.map((r) => ({ turn_id: r.turn_id, files: r.files, not_reversible: r.unrecorded, undone: r.files > 0 && r.standing === 0 }));
  }
}
