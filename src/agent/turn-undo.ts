import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { firstUnits } from '../protocol/code-points';
import { ServiceError, type AuditActor, type NotReversibleCall, type TurnChanges, type UndoFile, type UndoTurnResult } from '../protocol';
import type { FileChangeRow, NewAuditEntry, Store } from '../store';
import { KeyedQueue } from './keyed-queue';
import { removeFileInWorkspace, writeFileInWorkspace } from './tools/anchored-fs';
import { MAX_PREVIEW_DIFF_CHARS } from './tools/preview';
import { decodeText } from './tools/text-files';
import { unifiedDiff } from './tools/unified-diff';
import { resolveWorkspacePath } from './tools/workspace';
import { currentHash } from './turn-files';

/** All the diffs and texts of one answer together stay under this (a phone reads it, through the relay's frames). */
const MAX_ANSWER_TEXT_CHARS = 600_000;

/** One file of a turn: its first write's before-image and its last write's result. */
interface TurnFile {
  root: string;
  relative: string;
  rows: FileChangeRow[];
  before: string | null;
  after: string | null;
}

interface PlannedFile {
  file: TurnFile;
  status: UndoFile['status'];
  now: string | null;
}

function filesOf(rows: FileChangeRow[]): TurnFile[] {
  const byPath = new Map<string, TurnFile>();
  for (const row of rows) {
    if (row.kind !== 'file' || row.root === null || row.path === null) continue;
    const key = `${row.root}\0${row.path}`;
    const file = byPath.get(key) ?? { root: row.root, relative: row.path, rows: [], before: row.before_hash, after: row.after_hash };
    file.rows.push(row);
    file.after = row.after_hash;
    byPath.set(key, file);
  }
  return [...byPath.values()];
}

function notReversible(rows: FileChangeRow[]): NotReversibleCall[] {
  return rows.filter((r) => r.kind === 'unrecorded').map((r) => ({ tool: r.tool, detail: r.detail ?? '' }));
}

/** Text of a blob for a diff or a view: undefined for no file, null when it is not UTF-8 text. */
async function textOf(store: Pick<Store, 'blobs'>, hash: string | null): Promise<string | undefined | null> {
  if (hash === null) return undefined;
  const bytes = await store.blobs.get(hash);
  if (!bytes) return null;
  return decodeText(bytes) ?? null;
}

async function currentText(full: string): Promise<string | undefined | null> {
  try {
    return decodeText(await readFile(full)) ?? null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    return null;
  }
}

/** Cuts texts to what is left of the answer's budget. */
class TextBudget {
  private left = MAX_ANSWER_TEXT_CHARS;

  /** `text`, or its start when it does not fit (`cut` tells). */
  take(text: string): { text: string; cut: boolean } {
    const room = Math.max(0, Math.min(this.left, MAX_PREVIEW_DIFF_CHARS));
    const kept = firstUnits(text, room);
    this.left -= kept.length;
    return { text: kept, cut: kept.length < text.length };
  }
}

/** The diff of `from` to `to`, or a line naming a binary change. */
function diffOf(relative: string, from: string | undefined | null, to: string | undefined | null): string {
  if (from === null || to === null) return `--- a/${relative}\n+++ b/${relative}\nBinary file ${relative} differs\n`;
  return unifiedDiff(relative, from, to);
}

/**
 * undo_turn (docs/protocol.md, "Undoing a turn"): shows, then restores, the files a turn wrote, never
 * one that changed since (by the user or a later turn), and lists the calls it cannot reverse. Undos of
 * one conversation run one at a time.
 */
export class TurnUndo {
  private readonly queue = new KeyedQueue();

  constructor(private readonly store: Pick<Store, 'fileChanges' | 'blobs' | 'messages'>) {}

  /** The turns of a conversation that changed files or made calls undo cannot reverse. */
  turns(conversationId: string): Promise<TurnChanges[]> {
    return Promise.all(this.store.fileChanges.turns(conversationId).map(async (t) => ({ ...t, message_id: (await this.store.messages.replyOfTurn(conversationId, t.turn_id)) ?? null })));
  }

  /**
   * The preview (confirm false) or the undo itself of the turn holding `messageId`. An undo marks the
   * files it restored in one transaction with its audit entry (`by`: who asked); a crash before that
   * leaves restored files that the next undo sees as already restored.
   */
  async undo(conversationId: string, messageId: string, confirm: boolean, by?: AuditActor): Promise<UndoTurnResult> {
    const turnId = await this.store.messages.turnOf(conversationId, messageId);
    if (turnId === undefined) throw new ServiceError('not_found', `message ${messageId} not found in conversation ${conversationId}`);
    return this.queue.run(conversationId, async () => {
      const rows = this.store.fileChanges.ofTurn(conversationId, turnId);
      if (rows.some((r) => r.state === 'pending')) throw new ServiceError('conflict', 'the turn is still writing files; wait for it to end (or cancel it), then undo');
      const planned = await Promise.all(filesOf(rows).map((file) => this.plan(file)));
      const budget = new TextBudget();
      const files: UndoFile[] = [];
      const restoredIds: string[] = [];
      for (const p of planned) {
        const shown = await this.describe(p, budget);
        if (!confirm) {
          files.push(shown);
          continue;
        }
        const applied = await this.apply(p);
        if (applied.outcome === 'restored' || applied.outcome === 'deleted') restoredIds.push(...p.file.rows.map((r) => r.id));
        files.push({ ...shown, ...applied });
      }
      const result: UndoTurnResult = {
        conversation_id: conversationId,
        turn_id: turnId,
        message_id: (await this.store.messages.replyOfTurn(conversationId, turnId)) ?? null,
        applied: confirm,
        files,
        not_reversible: notReversible(rows),
      };
      if (confirm) await this.store.fileChanges.markUndone(restoredIds, by ? undoAuditEntry(result, by) : undefined);
      return result;
    });
  }

  private async plan(file: TurnFile): Promise<PlannedFile> {
    const now = await currentHash(path.join(file.root, file.relative)).catch(() => 'unreadable');
    if (file.rows.every((r) => r.state === 'undone')) return { file, status: 'undone', now };
    if (now === file.before) return { file, status: 'already_before', now };
    const last = file.rows[file.rows.length - 1];
    // `changed`: a crash left it neither before nor after; a later write of the same file still stands.
    const changed = file.rows.some((r) => r.state === 'changed') || now !== file.after || this.store.fileChanges.writtenAfter(file.root, file.relative, last.seq);
    return { file, status: changed ? 'changed_since' : 'will_restore', now };
  }

  private async describe({ file, status }: PlannedFile, budget: TextBudget): Promise<UndoFile> {
    const base = { path: file.relative, status, new_file: file.before === null, action: null, diff: '', truncated: false } satisfies UndoFile;
    const now = () => currentText(path.join(file.root, file.relative));
    if (status === 'will_restore') {
      const diff = budget.take(diffOf(file.relative, await now(), await textOf(this.store, file.before)));
      return { ...base, action: file.before === null ? 'delete' : 'restore', diff: diff.text, truncated: diff.cut };
    }
    if (status === 'changed_since') {
      const afterText = await textOf(this.store, file.after);
      const diff = budget.take(diffOf(file.relative, afterText, await now()));
      const texts = [await textOf(this.store, file.before), afterText].map((t) => (typeof t === 'string' ? budget.take(t) : undefined));
      const [before, after] = texts;
      return { ...base, diff: diff.text, truncated: diff.cut || texts.some((t) => t?.cut === true), before_text: before?.text ?? null, after_text: after?.text ?? null };
    }
    return base;
  }

  /** Restores one file if its status allows, checking again just before that it is as the turn left it. */
  private async apply({ file, status }: PlannedFile): Promise<Pick<UndoFile, 'outcome' | 'error'>> {
    if (status !== 'will_restore') return { outcome: 'skipped' };
    try {
      // Confined as a tool's write is: the recorded root, no symbolic link leading out, no private folder.
      const target = await resolveWorkspacePath([file.root], file.relative);
      if (target.root !== file.root || target.relative !== file.relative) throw new ServiceError('conflict', 'the path now leads elsewhere (a folder was replaced by a link)');
      if ((await currentHash(target.path)) !== file.after) return { outcome: 'skipped', error: 'the file changed while undoing' };
      let outcome: 'restored' | 'deleted';
      if (file.before === null) {
        await removeFileInWorkspace(target, file.relative);
        outcome = 'deleted';
      } else {
        const bytes = await this.store.blobs.get(file.before);
        if (!bytes) throw new ServiceError('server_error', 'the before-image is missing from the blob store');
        await writeFileInWorkspace(target, file.relative, bytes, true);
        outcome = 'restored';
      }
      return { outcome };
    } catch (error) {
      return { outcome: 'failed', error: error instanceof Error ? error.message : String(error) };
    }
  }
}

/** An undo as the audit log keeps it: which files it restored, deleted, skipped or failed on. */
function undoAuditEntry(result: UndoTurnResult, by: AuditActor): NewAuditEntry {
  const count = (outcome: string) => result.files.filter((f) => f.outcome === outcome).length;
  const parts = [`${count('restored')} restored`, `${count('deleted')} deleted`, `${count('skipped')} skipped`, `${count('failed')} failed`];
  return {
    kind: 'turn.undone',
    ...by,
    conversation_id: result.conversation_id,
    summary: `Undid a turn: ${parts.join(', ')}`,
    detail: {
      turn_id: result.turn_id,
      message_id: result.message_id,
      files: result.files.map((f) => ({ path: f.path, outcome: f.outcome ?? null })),
      not_reversible: result.not_reversible.length,
    },
  };
}
