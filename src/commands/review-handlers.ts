import { storeChangeStats } from '../agent/worktrees/worktrees';
import { changesOf } from '../git/changes';
import { commitChanges } from '../git/commit';
import { landChanges } from '../git/land';
import { discardWorktree, pushChanges, unlandedWork } from '../git/push';
import { revertChanges } from '../git/revert';
import { ServiceError, type CommandOf, type CommandType, type ResultOf, type ServiceConfig } from '../protocol';
import { exactName } from '../protocol/display-name';
import type { ChangedFile, ChangeHunk, Changes, WorktreeRecord } from '../protocol/worktrees';
import type { WorktreeStats } from '../store';
import type { CommandContext } from './context';
import { announceConversation } from './conversation-updates';
import type { ClientSession } from './session';

type ReviewCommandType = 'get_changes' | 'revert_changes' | 'comment_on_change' | 'commit_changes' | 'draft_commit_message' | 'land_changes' | 'push_changes' | 'discard_changes';
type ReviewHandler<T extends ReviewCommandType> = (command: CommandOf<T>, session: ClientSession, ctx: CommandContext) => Promise<ResultOf<T>>;

/**
 * The conversation's worktree, for a session that may see the conversation (a webhook account only its
 * own: not_found otherwise), or not_found when it works in the workspace or its worktree was discarded.
 */
export function worktreeFor(conversationId: string, session: ClientSession, ctx: CommandContext): WorktreeRecord {
  ctx.agent.requireConversation(conversationId, session.source);
  const worktree = ctx.worktrees.worktreeOf(conversationId);
  if (!worktree) throw new ServiceError('not_found', 'this conversation works in the workspace, not in a worktree of its own: it has no changes to review');
  if (worktree.state === 'discarded') throw new ServiceError('not_found', "this conversation's worktree was discarded");
  return worktree;
}

/**
 * A webhook account may read its own conversations' changes and comment on them (the comment is a message
 * to its agent, as its posts are); changing the worktree is for the people at the machine.
 */
function notForWebhooks(type: CommandType, session: ClientSession): void {
  if (session.source.kind === 'webhook') throw new ServiceError('unauthorized', `${type} is not for a webhook account (it may get_changes and comment_on_change on its own conversations)`);
}

/** service.json `worktrees.allow_hooks`: the owner lets the repository's hooks run on commit, land and push. */
export function allowHooksOf(config: ServiceConfig): boolean {
  return config.worktrees.allow_hooks;
}

/** Review and land (docs/protocol.md, "Review and land"); land, push and discard are the owner's (roles.ts). */
export const reviewHandlers: { [T in ReviewCommandType]: ReviewHandler<T> } = {
  async get_changes(command, session, ctx) {
    return changesOf(worktreeFor(command.conversation_id, session, ctx));
  },

  async revert_changes(command, session, ctx) {
    notForWebhooks(command.type, session);
    const worktree = worktreeFor(command.conversation_id, session, ctx);
    const changes = await revertChanges(worktree, command.path, command.hunk_id);
    await rowChanged(ctx, worktree, statsOf(changes));
    return changes;
  },

  async comment_on_change(command, session, ctx) {
    const changes = await changesOf(worktreeFor(command.conversation_id, session, ctx));
    const message = commentMessage(changes, command);
    const chat: CommandOf<'chat'> = { type: 'chat', id: command.id, message, conversation_id: command.conversation_id, stream: command.stream, client_message_id: command.client_message_id };
    return ctx.turns.run({ session, requestId: command.id, message: { kind: 'chat', command: chat, check: () => [] } });
  },

  async commit_changes(command, session, ctx) {
    notForWebhooks(command.type, session);
    const worktree = worktreeFor(command.conversation_id, session, ctx);
    const { commit } = await commitChanges(worktree, command.message, { allowHooks: allowHooksOf(ctx.config.current) });
    const changes = await changesOf(worktree);
    await rowChanged(ctx, worktree, statsOf(changes));
    return { commit, changes };
  },

  async draft_commit_message(command, session, ctx) {
    notForWebhooks(command.type, session);
    const changes = await changesOf(worktreeFor(command.conversation_id, session, ctx));
    if (changes.files.length === 0) throw new ServiceError('conflict', 'the worktree has no changes to describe');
    return { message: await ctx.agent.draftCommitMessage(diffText(changes.files)) };
  },

  async land_changes(command, session, ctx) {
    const worktree = worktreeFor(command.conversation_id, session, ctx);
    const result = await landChanges(worktree, command.method, { message: command.message, allowHooks: allowHooksOf(ctx.config.current) });
    if (result.landed) {
      await ctx.worktrees.setState(worktree.conversationId, 'landed');
      // The base branch moved (it holds the branch now): the row says so, counted again by git.
      await storeChangeStats(ctx.worktrees, worktree, ctx.logger);
      await rowChanged(ctx, worktree);
    }
    return result;
  },

  async push_changes(command, session, ctx) {
    return pushChanges(worktreeFor(command.conversation_id, session, ctx), command.remote, { allowHooks: allowHooksOf(ctx.config.current) });
  },

  async discard_changes(command, session, ctx) {
    const worktree = worktreeFor(command.conversation_id, session, ctx);
    if (!command.confirm) {
      const lost = await unlandedWork(worktree);
      throw new ServiceError(
        'invalid_request',
        `discard_changes removes this conversation's worktree folder and its branch ${worktree.branch}: ${lostText(lost)} would be lost; send confirm: true to discard`,
      );
    }
    await discardWorktree(worktree);
    await ctx.worktrees.setState(worktree.conversationId, 'discarded');
    await rowChanged(ctx, worktree);
    return { discarded: true as const };
  },
};

/**
 * After a review command changed a worktree or its state: the conversation's list row (its "N changed",
 * base_moved, state) stored fresh and sent as `conversation.updated`, as a turn's end does, so no list
 * goes on showing the count from before a revert, commit, land or discard.
 */
async function rowChanged(ctx: CommandContext, worktree: WorktreeRecord, stats?: WorktreeStats): Promise<void> {
  if (stats) await ctx.worktrees.setStats(worktree.conversationId, stats);
  announceConversation(ctx, worktree.conversationId);
}

/** The row's counts as an answer's `worktree` tells them (no git run again). */
function statsOf(changes: Changes): WorktreeStats {
  return { changedFiles: changes.worktree.changed_files, baseMoved: changes.worktree.base_moved };
}

/** delete_conversation of a conversation whose worktree holds work not landed: `conflict` unless confirmed. */
export async function requireDeleteConfirmed(conversationId: string, confirm: boolean, ctx: CommandContext): Promise<void> {
  const worktree = ctx.worktrees.worktreeOf(conversationId);
  if (confirm || !worktree || worktree.state !== 'active') return;
  const lost = await unlandedWork(worktree);
  if (lost.commits + lost.uncommittedFiles === 0) return;
  throw new ServiceError('conflict', `the conversation's worktree holds work not landed (${lostText(lost)} on ${worktree.branch}): land or discard it, or delete with confirm: true`);
}

function lostText(lost: { commits: number; uncommittedFiles: number }): string {
  return `${lost.commits} commit(s) not landed and ${lost.uncommittedFiles} uncommitted file(s)`;
}

/**
 * The comment as the conversation's next user message: the file, the line, the comment, and the hunk it
 * is on quoted as a fenced diff, so the agent fixes exactly that. The hunk is the one named (a stale id is
 * a conflict), else the one whose new side holds the line, else none.
 */
export function commentMessage(changes: Changes, command: Pick<CommandOf<'comment_on_change'>, 'path' | 'line' | 'hunk_id' | 'comment'>): string {
  const file = changes.files.find((f) => f.path === command.path);
  if (!file) throw new ServiceError('not_found', `${command.path} has no changes in this conversation's worktree`);
  let hunk: ChangeHunk | undefined;
  if (command.hunk_id !== undefined) {
    hunk = file.hunks.find((h) => h.id === command.hunk_id);
    if (!hunk) throw new ServiceError('conflict', `hunk ${command.hunk_id} of ${file.path} is not among its changes any more: get_changes again`);
  } else {
    hunk = file.hunks.find((h) => command.line >= h.new_start && command.line < h.new_start + Math.max(h.new_lines, 1));
  }
  const quoted = hunk ? `\n\n${fenced(file, [hunk])}` : '';
  return `Review comment on \`${exactName(file.path)}\`, line ${command.line}:\n\n${command.comment}${quoted}`;
}

/** Hunks as a fenced diff block, the fence longer than any run of backticks inside. */
function fenced(file: ChangedFile, hunks: readonly ChangeHunk[]): string {
  const body = [`--- a/${exactName(file.old_path ?? file.path)}`, `+++ b/${exactName(file.path)}`, ...hunks.flatMap((h) => [h.header, ...h.lines])].join('\n');
  const longest = Math.max(2, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}diff\n${body}\n${fence}`;
}

/** The changes as one text for the model that drafts a commit message. */
function diffText(files: readonly ChangedFile[]): string {
  return files
    .map((f) => {
      const title = `${f.status} ${f.old_path ? `${exactName(f.old_path)} -> ` : ''}${exactName(f.path)} (+${f.additions} -${f.deletions})${f.binary ? ' binary' : ''}`;
      return [title, ...f.hunks.flatMap((h) => [h.header, ...h.lines]), ...(f.cut ? ['[more of this file not shown]'] : [])].join('\n');
    })
    .join('\n\n');
}
