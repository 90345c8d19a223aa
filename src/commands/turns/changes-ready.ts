import { changesOf } from '../../git/changes';
import type { ChangesReadyEvent } from '../../protocol/worktrees';
import { canAccess } from '../../protocol/sources';
import type { Store } from '../../store';
import type { WorktreeRecords } from '../context';
import type { EventHub } from '../event-hub';

/**
 * After a turn of a worktree conversation ended: when its worktree holds changes, `changes.ready` (the
 * files and line counts) to every client that may see the conversation, its followers numbered, and the
 * push notifier sends "ready for review". A worktree git cannot read (its folder deleted) tells nothing.
 */
export async function announceChangesReady(deps: { events: EventHub; store: Store; worktrees: WorktreeRecords }, conversationId: string): Promise<void> {
  const worktree = deps.worktrees.worktreeOf(conversationId);
  if (!worktree || worktree.state !== 'active') return;
  const changes = await changesOf(worktree, { fileChars: 0, totalChars: 0 }).catch(() => undefined);
  const conversation = deps.store.conversations.get(conversationId);
  if (!changes || changes.files.length === 0 || !conversation) return;
  const event: ChangesReadyEvent = {
    event: 'changes.ready',
    conversation_id: conversationId,
    files: changes.files.length,
    additions: changes.files.reduce((sum, file) => sum + file.additions, 0),
    deletions: changes.files.reduce((sum, file) => sum + file.deletions, 0),
  };
  deps.events.broadcast(event, (session) => canAccess(session.source, conversation.source));
}
