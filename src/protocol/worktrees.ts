// Runs in their own git worktrees (issue 24): the shapes both ends share. A conversation works either in
// the workspace (as before) or in its own worktree: a branch `assistant/<short title>-<id>` made from the
// workspace's HEAD and checked out in a folder outside the user's working tree. Its changes are reviewed
// (`get_changes`), reverted by hunk or file, commented on (the comment becomes its next user message),
// committed, landed into the workspace's branch, pushed, or discarded. docs/protocol.md "Worktrees".
import * as z from 'zod';
import { ClientMessageId, command, nonEmpty } from './command-frame';
import { Seq } from './envelope';
import { lazySchema } from './lazy-schema';

/** Where a conversation's tools work. */
export const WorkArea = lazySchema(() => z.enum(['workspace', 'worktree']));
export type WorkArea = z.infer<typeof WorkArea>;

/** `active`: in use; `landed`: its branch was brought into the base; `discarded`: removed on request; `missing`: its folder was deleted outside the service. */
export const WorktreeState = lazySchema(() => z.enum(['active', 'landed', 'discarded', 'missing']));
export type WorktreeState = z.infer<typeof WorktreeState>;

/** What the service keeps of a conversation's worktree (store, one row per conversation that has one). */
export interface WorktreeRecord {
  conversationId: string;
  /** The real path of the user's repository (its main working tree) the worktree was made from. */
  repository: string;
  /** The worktree's real path: outside the repository's working tree, in service.json's `worktrees.folder` (default `<repository>.worktrees/` beside it). */
  path: string;
  /** `assistant/<slug>-<id>`. */
  branch: string;
  /** The branch the workspace had checked out when the worktree was made; null on a detached HEAD. */
  baseBranch: string | null;
  /** The commit the worktree was made from (the merge base of everything shown as its changes). */
  baseCommit: string;
  state: WorktreeState;
  createdAt: string;
}

/** A conversation's worktree as `list_conversations` and `get_changes` show it. */
export const WorktreeInfo = lazySchema(() =>
  z.object({
    branch: z.string(),
    base_branch: z.string().nullable(),
    base_commit: z.string(),
    path: z.string(),
    state: WorktreeState,
    /** Files that differ from base_commit (committed on the branch or not). */
    changed_files: z.number().int().nonnegative(),
    /** base_branch's tip is no longer base_commit (the person committed since): landing may conflict. */
    base_moved: z.boolean(),
  }),
);
export type WorktreeInfo = z.infer<typeof WorktreeInfo>;

export const ChangeStatus = lazySchema(() => z.enum(['added', 'modified', 'deleted', 'renamed']));
export type ChangeStatus = z.infer<typeof ChangeStatus>;

/** One hunk of a file's diff against base_commit. */
export const ChangeHunk = lazySchema(() =>
  z.object({
    /** Stable while the hunk's text does not change: a hash of the file's path and the hunk's lines. */
    id: z.string(),
    /** `@@ -a,b +c,d @@ context`. */
    header: z.string(),
    old_start: z.number().int(),
    old_lines: z.number().int(),
    new_start: z.number().int(),
    new_lines: z.number().int(),
    /** The hunk's lines as in a unified diff: each starts with ' ', '+' or '-' (and `\ No newline at end of file`). */
    lines: z.array(z.string()),
  }),
);
export type ChangeHunk = z.infer<typeof ChangeHunk>;

export const ChangedFile = lazySchema(() =>
  z.object({
    /** Relative to the worktree's root, `/` separators. */
    path: z.string(),
    /** A renamed file's path before. */
    old_path: z.string().nullable(),
    status: ChangeStatus,
    additions: z.number().int().nonnegative(),
    deletions: z.number().int().nonnegative(),
    /** No hunks are shown for a binary file. */
    binary: z.boolean(),
    hunks: z.array(ChangeHunk),
    /** True when only the first hunks are shown (a huge diff). */
    cut: z.boolean(),
  }),
);
export type ChangedFile = z.infer<typeof ChangedFile>;

/** `get_changes`' answer (and what `revert_changes` answers after reverting). */
export const Changes = lazySchema(() =>
  z.object({
    conversation_id: z.string(),
    worktree: WorktreeInfo,
    files: z.array(ChangedFile),
    /** Commits on the branch since base_commit. */
    commits: z.number().int().nonnegative(),
    /** Files changed in the worktree but not committed yet. */
    uncommitted_files: z.number().int().nonnegative(),
  }),
);
export type Changes = z.infer<typeof Changes>;

export const LandMethod = lazySchema(() => z.enum(['merge', 'squash', 'rebase']));
export type LandMethod = z.infer<typeof LandMethod>;

/** Why a land changed nothing: the person's own uncommitted changes to files the branch touches, or a conflict with the base. */
export const LandBlock = lazySchema(() =>
  z.object({
    reason: z.enum(['uncommitted', 'conflict', 'nothing_to_land', 'not_on_base']),
    files: z.array(z.string()),
    message: z.string(),
  }),
);
export type LandBlock = z.infer<typeof LandBlock>;

export const LandResult = lazySchema(() =>
  z.object({
    landed: z.boolean(),
    method: LandMethod,
    /** The base branch's new tip (null when not landed). */
    commit: z.string().nullable(),
    blocked: LandBlock.nullable(),
  }),
);
export type LandResult = z.infer<typeof LandResult>;

export const PushResult = lazySchema(() =>
  z.object({
    remote: z.string(),
    branch: z.string(),
    /** The page to open a pull/merge request on GitHub, GitLab or Bitbucket; null when the remote's host is not one of them. */
    compare_url: z.string().nullable(),
  }),
);
export type PushResult = z.infer<typeof PushResult>;

// ---- Commands of review and land (docs/protocol.md, "Review and land") ----------------------------

const conversationId = lazySchema(() => nonEmpty('conversation_id'));
/** A changed file's path as get_changes names it (relative, `/` separators). */
const changePath = lazySchema(() => z.string({ error: 'path must be a string' }).min(1, { error: 'path must not be empty' }).max(4096, { error: 'path must be at most 4096 characters' }));
const hunkIdField = lazySchema(() => z.string({ error: 'hunk_id must be a string' }).regex(/^[0-9a-f]{16}$/, { error: 'hunk_id must be a hunk id from get_changes' }));

/** Longest commit message, comment on a change, land message. */
export const MAX_REVIEW_TEXT_CHARS = 20_000;
const reviewText = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .trim()
    .min(1, { error: `${what} must not be empty` })
    .max(MAX_REVIEW_TEXT_CHARS, { error: `${what} must be at most ${MAX_REVIEW_TEXT_CHARS} characters` });

export const GetChangesCommand = lazySchema(() => command('get_changes', { conversation_id: conversationId }));

/** A whole file back to base (no hunk_id), or one hunk of it reversed. */
export const RevertChangesCommand = lazySchema(() => command('revert_changes', { conversation_id: conversationId, path: changePath, hunk_id: hunkIdField.optional() }));

/** A comment on a line of a change: the conversation's next user message, the line and its hunk quoted. */
export const CommentOnChangeCommand = lazySchema(() =>
  command('comment_on_change', {
    conversation_id: conversationId,
    path: changePath,
    /** The line in the file as changed (the hunk's new side), from 1. */
    line: z.number({ error: 'line must be an integer' }).int({ error: 'line must be an integer' }).min(1, { error: 'line must be at least 1' }),
    hunk_id: hunkIdField.optional(),
    comment: reviewText('comment'),
    stream: z.boolean().optional().default(false),
    client_message_id: ClientMessageId.optional(),
  }),
);

export const CommitChangesCommand = lazySchema(() => command('commit_changes', { conversation_id: conversationId, message: reviewText('message') }));

export const DraftCommitMessageCommand = lazySchema(() => command('draft_commit_message', { conversation_id: conversationId }));

export const LandChangesCommand = lazySchema(() =>
  command('land_changes', {
    conversation_id: conversationId,
    method: LandMethod,
    /** The merge or squash commit's message (a default names the branch); a rebase keeps each commit's own. */
    message: reviewText('message').optional(),
  }),
);

/** A remote's name as git allows it (never an option, a URL or a path). */
export const RemoteName = lazySchema(() =>
  z.string({ error: 'remote must be a string' }).regex(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/, { error: "remote must be the name of one of the repository's remotes" }),
);

export const PushChangesCommand = lazySchema(() => command('push_changes', { conversation_id: conversationId, remote: RemoteName.optional().default('origin') }));

/** Removes the worktree and its branch: without `confirm`, invalid_request saying what would be lost. */
export const DiscardChangesCommand = lazySchema(() =>
  command('discard_changes', { conversation_id: conversationId, confirm: z.boolean({ error: 'confirm must be a boolean' }).optional().default(false) }),
);

export const WorktreeCommands = {
  get_changes: GetChangesCommand,
  revert_changes: RevertChangesCommand,
  comment_on_change: CommentOnChangeCommand,
  commit_changes: CommitChangesCommand,
  draft_commit_message: DraftCommitMessageCommand,
  land_changes: LandChangesCommand,
  push_changes: PushChangesCommand,
  discard_changes: DiscardChangesCommand,
};

/**
 * What review's commands answer (protocol/results.ts spreads it). comment_on_change answers as chat does:
 * its entry is in results.ts, since importing chat.ts here closes a cycle (chat -> conversations -> worktrees).
 */
export const WorktreeResults = lazySchema(() => ({
  get_changes: Changes,
  revert_changes: Changes,
  commit_changes: z.object({ commit: z.string(), changes: Changes }),
  draft_commit_message: z.object({ message: z.string() }),
  land_changes: LandResult,
  push_changes: PushResult,
  discard_changes: z.object({ discarded: z.literal(true) }),
}));

/** A turn of a worktree conversation ended with changes: to its followers, and a "ready for review" push. */
export const ChangesReadyEvent = lazySchema(() =>
  z.object({
    event: z.literal('changes.ready'),
    seq: Seq,
    conversation_id: z.string(),
    files: z.number().int().nonnegative(),
    additions: z.number().int().nonnegative(),
    deletions: z.number().int().nonnegative(),
  }),
);
export type ChangesReadyEvent = z.infer<typeof ChangesReadyEvent>;
