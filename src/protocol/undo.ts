import * as z from 'zod';
import { command, nonEmpty } from './command-frame';
import { lazySchema } from './lazy-schema';

/**
 * Undoing a turn (docs/protocol.md, "Undoing a turn"): what undo_turn shows of each file the turn wrote,
 * and list_turn_changes of each turn that changed files.
 *
 * - `will_restore`: the file is as the turn left it; undo puts its before-image back (`action`
 *   `restore`), or deletes it when the turn created it (`delete`).
 * - `changed_since`: someone (the user, a later turn) changed it after the turn: undo leaves it alone.
 * - `already_before`: it already holds what it held before the turn.
 * - `undone`: an earlier undo restored it.
 */
export const UndoFileStatus = lazySchema(() => z.enum(['will_restore', 'changed_since', 'already_before', 'undone']));
export type UndoFileStatus = z.infer<typeof UndoFileStatus>;

export const UndoFile = lazySchema(() =>
  z.object({
    /** Relative to its workspace folder, with `/` separators. */
    path: z.string(),
    status: UndoFileStatus,
    /** What undo does to it (with `will_restore`), else null. */
    action: z.enum(['restore', 'delete']).nullable(),
    /** The turn created it (it did not exist before). */
    new_file: z.boolean(),
    /** `will_restore`: the unified diff from now to what will be restored; `changed_since`: from the turn's result to now. Else empty. */
    diff: z.string(),
    /** The diff (or a text) was cut to keep the answer small. */
    truncated: z.boolean(),
    /** `changed_since`, for a three-way view: the text before the turn and the turn's result (null: no file, or not text). */
    before_text: z.string().nullable().optional(),
    after_text: z.string().nullable().optional(),
    /** With `confirm`: what was done. */
    outcome: z.enum(['restored', 'deleted', 'skipped', 'failed']).optional(),
    /** With outcome `failed`: why. */
    error: z.string().optional(),
  }),
);
export type UndoFile = z.infer<typeof UndoFile>;

/** A call whose effects undo cannot reverse (run_command, custom and MCP tools; a write whose before-image was not kept). */
export const NotReversibleCall = lazySchema(() => z.object({ tool: z.string(), detail: z.string() }));
export type NotReversibleCall = z.infer<typeof NotReversibleCall>;

export const UndoTurnResult = lazySchema(() =>
  z.object({
    conversation_id: z.string(),
    /** The id of the user message that started the turn. */
    turn_id: z.string(),
    /** The turn's reply, null when it has none (cancelled, failed, interrupted). */
    message_id: z.string().nullable(),
    /** True with `confirm`: the files were restored as each one's `outcome` says. */
    applied: z.boolean(),
    files: z.array(UndoFile),
    not_reversible: z.array(NotReversibleCall),
  }),
);
export type UndoTurnResult = z.infer<typeof UndoTurnResult>;

export const TurnChanges = lazySchema(() =>
  z.object({
    turn_id: z.string(),
    message_id: z.string().nullable(),
    /** Files it wrote, and calls it made that undo cannot reverse. */
    files: z.number().int(),
    not_reversible: z.number().int(),
    /** Every file it wrote was restored by an undo. */
    undone: z.boolean(),
  }),
);
export type TurnChanges = z.infer<typeof TurnChanges>;

/** Undo a turn: a preview of what it would restore, or with `confirm` the restore (docs/protocol.md, "Undoing a turn"). */
export const UndoTurnCommand = lazySchema(() =>
  command('undo_turn', {
    conversation_id: nonEmpty('conversation_id'),
    /** The turn's user message, its reply, or any message of the turn. */
    message_id: nonEmpty('message_id'),
    confirm: z.boolean({ error: 'confirm must be a boolean' }).optional().default(false),
  }),
);
export const ListTurnChangesCommand = lazySchema(() => command('list_turn_changes', { conversation_id: nonEmpty('conversation_id') }));

/**
 * A turn's changes were undone (undo_turn with `confirm` restored or deleted a file), from any client: to
 * every client that may see the conversation, so a page showing the turn marks it as list_turn_changes
 * would after a reload. `undone`: every file the turn wrote is restored now (list_turn_changes' `undone`).
 */
export const TurnUndoneEvent = lazySchema(() =>
  z.object({
    event: z.literal('turn.undone'),
    conversation_id: z.string(),
    turn_id: z.string(),
    /** The turn's reply (where a page shows Undo), null when it has none. */
    message_id: z.string().nullable(),
    undone: z.boolean(),
  }),
);
export type TurnUndoneEvent = z.infer<typeof TurnUndoneEvent>;

export const UndoResults = lazySchema(() => ({
  undo_turn: UndoTurnResult,
  list_turn_changes: z.object({ turns: z.array(TurnChanges) }),
}));
