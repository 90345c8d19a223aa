import type { ConversationState } from '../protocol';

export interface ConversationActivityState {
  state: ConversationState;
  pendingPermissions: number;
}

/**
 * What each conversation is doing now (list_conversations' `state` and `pending_permissions`): the agent
 * counts its queued turns, the permission broker its waiting requests. `onChange` hears of every change
 * of state or count, except a turn starting in an idle conversation: its first stored message follows at
 * once and is announced with the row (conversation.updated), already `running`.
 */
export class ConversationActivity {
  private readonly turns = new Map<string, number>();
  private readonly waiting = new Map<string, number>();

  constructor(private readonly onChange: (conversationId: string) => void = () => undefined) {}

  of(conversationId: string): ConversationActivityState {
    const pendingPermissions = this.waiting.get(conversationId) ?? 0;
    const state: ConversationState = pendingPermissions > 0 ? 'waiting' : (this.turns.get(conversationId) ?? 0) > 0 ? 'running' : 'idle';
    return { state, pendingPermissions };
  }

  turnQueued(conversationId: string): void {
    bump(this.turns, conversationId, 1);
  }

  turnEnded(conversationId: string): void {
    const before = this.of(conversationId);
    bump(this.turns, conversationId, -1);
    this.announceIfChanged(conversationId, before);
  }

  waitStarted(conversationId: string): void {
    bump(this.waiting, conversationId, 1);
    this.onChange(conversationId);
  }

  waitEnded(conversationId: string): void {
    bump(this.waiting, conversationId, -1);
    this.onChange(conversationId);
  }

  private announceIfChanged(conversationId: string, before: ConversationActivityState): void {
    const after = this.of(conversationId);
    if (after.state !== before.state || after.pendingPermissions !== before.pendingPermissions) this.onChange(conversationId);
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
