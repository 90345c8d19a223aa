import type { Database } from './database';
import { names, ReadMemo } from './read-memo';
import type { WorktreeRecord, WorktreeState } from '../protocol/worktrees';

/** The counts list_conversations shows, computed at a turn's end (never a git call per listed row). */
export interface WorktreeStats {
  changedFiles: number;
  baseMoved: boolean;
}

export type StoredWorktree = WorktreeRecord & WorktreeStats;

/** The table (migration 16). No foreign key: a deleted conversation's row stays until its worktree is removed at the next start. */
export const WORKTREES_TABLE_SQL = `CREATE TABLE worktrees (conversation_id TEXT PRIMARY KEY, repository TEXT NOT NULL, path TEXT NOT NULL, branch TEXT NOT NULL, base_branch TEXT, base_commit TEXT NOT NULL, state TEXT NOT NULL, created_at TEXT NOT NULL, changed_files INTEGER NOT NULL DEFAULT 0, base_moved INTEGER NOT NULL DEFAULT 0)`;

interface Row {
  conversation_id: string;
  repository: string;
  path: string;
  branch: string;
  base_branch: string | null;
  base_commit: string;
  state: WorktreeState;
  created_at: string;
  changed_files: number;
  base_moved: number;
}

const COLUMNS = 'conversation_id, repository, path, branch, base_branch, base_commit, state, created_at, changed_files, base_moved';

function fromRow(row: Row): StoredWorktree {
  return {
    conversationId: row.conversation_id,
    repository: row.repository,
    path: row.path,
    branch: row.branch,
    baseBranch: row.base_branch,
    baseCommit: row.base_commit,
    state: row.state,
    createdAt: row.created_at,
    changedFiles: Number(row.changed_files),
    baseMoved: Number(row.base_moved) === 1,
  };
}

/** Conversations that work in their own git worktree (docs/protocol.md, "Worktrees"): one row each. */
export class WorktreesRepo {
  /** Rows read by conversation (none, mostly), kept while no write names the table (read-memo.ts): a turn reads none. */
  private readonly rows: ReadMemo<Row | undefined>;

  constructor(private readonly db: Database) {
    this.rows = new ReadMemo(db, names('worktrees'), (conversationId) => this.db.get<Row>(`SELECT ${COLUMNS} FROM worktrees WHERE conversation_id = ?`, [conversationId]));
  }

  /** A record of its own each call (what a caller does with it stays its own). */
  get(conversationId: string): StoredWorktree | undefined {
    const row = this.rows.get(conversationId);
    return row && fromRow(row);
  }

  /** The worktree a conversation works in, if it has one (any state). */
  worktreeOf(conversationId: string): WorktreeRecord | undefined {
    return this.get(conversationId);
  }

  /** Every row, oldest first (the clean-up at start, the folders already taken). */
  list(): StoredWorktree[] {
    return this.db.all<Row>(`SELECT ${COLUMNS} FROM worktrees ORDER BY created_at, conversation_id`).map(fromRow);
  }

  /** Stores a new worktree; throws if the conversation already has one. */
  insert(record: WorktreeRecord): Promise<void> {
    return this.db.write((tx) => {
      tx.run(`INSERT INTO worktrees (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0)`, [
        record.conversationId,
        record.repository,
        record.path,
        record.branch,
        record.baseBranch,
        record.baseCommit,
        record.state,
        record.createdAt,
      ]);
    });
  }

  /** false when the conversation has no worktree. */
  setState(conversationId: string, state: WorktreeState): Promise<boolean> {
    return this.db.write((tx) => tx.run('UPDATE worktrees SET state = ? WHERE conversation_id = ?', [state, conversationId]).changes > 0);
  }

  setStats(conversationId: string, stats: WorktreeStats): Promise<boolean> {
    return this.db.write((tx) => tx.run('UPDATE worktrees SET changed_files = ?, base_moved = ? WHERE conversation_id = ?', [stats.changedFiles, stats.baseMoved ? 1 : 0, conversationId]).changes > 0);
  }

  /** Forgets the row (its folder was removed). */
  remove(conversationId: string): Promise<boolean> {
    return this.db.write((tx) => tx.run('DELETE FROM worktrees WHERE conversation_id = ?', [conversationId]).changes > 0);
  }

  /**
   * Rows made before `madeBefore` (an ISO time) whose conversation was deleted (the clean-up at start
   * removes their folders). A row made since has no conversation yet while its chat is being stored.
   */
  orphans(madeBefore: string): StoredWorktree[] {
    return this.db.all<Row>(`SELECT ${COLUMNS} FROM worktrees w WHERE w.created_at < ? AND NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = w.conversation_id)`, [madeBefore]).map(fromRow);
  }
}
