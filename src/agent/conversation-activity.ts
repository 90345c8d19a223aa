import type { ConversationState, QueuedMessage } from '../protocol';
import { QueueBound } from './queue-bound';

export interface ConversationActivityState {
  state: ConversationState;
  pendingPermissions: number;
  queued: QueuedMessage[];
}

/** A message waiting behind a running turn, until its own turn starts or a client removes it. */
export interface QueuedTurn {
  /** Its turn begins: false when it was removed meanwhile (then it must do nothing). */
  start(): boolean;
}

interface Waiting {
  message: QueuedMessage;
  removed: () => void;
  /** Who sent it (its person): a password user or a webhook account may remove only its own messages. */
  sender: string;
  /** Uncounts it from its sender's bound (a chat's; nothing for a webhook message). */
  release: () => void;
}

/**
 * An announcement that tells of a turn's stored reply too (`source`: the turn's), made at the turn's end:
 * `stateChanged` when that end changed the conversation's state as well (the last turn ended: `idle`).
 */
export interface ReplyAnnounced {
  source: string;
  stateChanged: boolean;
}

/**
 * What each conversation is doing now (list_conversations' `state` and `pending_permissions`): the agent
 * counts its queued turns, the permission broker its waiting requests. `onChange` hears of every change
 * of state or count, except a turn starting in an idle conversation: its first stored message follows at
 * once and is announced with the row (conversation.updated), already `running`. A turn's stored reply
 * (`replied`) is announced at that turn's end, in one announcement with the state that end leaves.
 */
export class ConversationActivity {
  private readonly turns = new Map<string, number>();
  private readonly waiting = new Map<string, number>();
  private readonly queues = new Map<string, Waiting[]>();
  /** What each person's waiting chats hold, bounded (queue-bound.ts). */
  private readonly bound = new QueueBound();
  /** Conversations whose announcements wait (held), and whether one is due at release. */
  private readonly held = new Map<string, { holds: number; due: boolean }>();
  /** Conversations whose running turn stored its reply, announced at its end: the turn's source. */
  private readonly replies = new Map<string, string>();
  private readonly onChange: (conversationId: string, reply?: ReplyAnnounced) => void;

  constructor(onChange: (conversationId: string, reply?: ReplyAnnounced) => void = () => undefined) {
    this.onChange = (conversationId, reply) => {
      const hold = this.held.get(conversationId);
      // Held: the row announced at release is read then, the reply in it.
      if (hold) hold.due = true;
      else onChange(conversationId, reply);
    };
  }

  /**
   * Holds the conversation's announcements (its row goes out with them, its last message too) while a
   * turn's user message is stored but not yet durable: that text must reach nobody before it is. The
   * returned release ends the hold; `announce` false when its caller announces the row itself, which it
   * may only when told true: while another turn's message still holds the conversation (a cancelled turn
   * waiting for its sync, the next one's message stored behind it), the row already carries that text, so
   * the announcement is left to the last release.
   */
  hold(conversationId: string): (announce: boolean) => boolean {
    const hold = this.held.get(conversationId) ?? { holds: 0, due: false };
    hold.holds++;
    this.held.set(conversationId, hold);
    let released = false;
    return (announce) => {
      if (released) return true;
      released = true;
      if (--hold.holds > 0) {
        if (!announce) hold.due = true;
        return false;
      }
      this.held.delete(conversationId);
      if (announce && hold.due) this.onChange(conversationId);
      return true;
    };
  }

  of(conversationId: string): ConversationActivityState {
    const pendingPermissions = this.waiting.get(conversationId) ?? 0;
    const state: ConversationState = pendingPermissions > 0 ? 'waiting' : (this.turns.get(conversationId) ?? 0) > 0 ? 'running' : 'idle';
    return { state, pendingPermissions, queued: (this.queues.get(conversationId) ?? []).map((w) => w.message) };
  }

  /**
   * A message arrives for the conversation: when a turn of it is already queued or running, it is listed
   * (every client hears) until it starts; `removed` is called if a client removes it first. Undefined when
   * nothing runs: its turn starts at once (`message` is made only when listed: a preview is not worked
   * out for a turn that does not wait, nor `chars`). A chat gives its `chars` (text and context): beyond its sender's
   * bound it is refused (rate_limited, thrown) and nothing waits.
   */
  enqueue(conversationId: string, message: () => QueuedMessage, removed: () => void, sender: string, chars?: () => number): QueuedTurn | undefined {
    if ((this.turns.get(conversationId) ?? 0) === 0) return undefined;
    const release = chars === undefined ? () => undefined : this.bound.take(sender, chars());
    const entry: Waiting = { message: message(), removed, sender, release };
    this.queues.set(conversationId, [...(this.queues.get(conversationId) ?? []), entry]);
    this.onChange(conversationId);
    return { start: () => this.unlist(conversationId, entry) };
  }

  /**
   * A client takes a waiting message out (remove_queued): false when no message of that id waits there
   * (or, given `sentBy`, none sent by that person).
   */
  remove(conversationId: string, clientMessageId: string, sentBy?: string): boolean {
    const entry = this.queues.get(conversationId)?.find((w) => w.message.client_message_id === clientMessageId && (sentBy === undefined || w.sender === sentBy));
    if (!entry || !this.unlist(conversationId, entry)) return false;
    entry.removed();
    return true;
  }

  /** Takes an entry off its conversation's list and tells every client; false when it was no longer listed. */
  private unlist(conversationId: string, entry: Waiting): boolean {
    const queue = this.queues.get(conversationId) ?? [];
    if (!queue.includes(entry)) return false;
    entry.release();
    const rest = queue.filter((w) => w !== entry);
    if (rest.length > 0) this.queues.set(conversationId, rest);
    else this.queues.delete(conversationId);
    this.onChange(conversationId);
    return true;
  }

  turnQueued(conversationId: string): void {
    bump(this.turns, conversationId, 1);
  }

  /**
   * The running turn stored its reply (`source`: the turn's): told at its end (turnEnded), a few ticks
   * later, with the state that end leaves, rather than as a row of its own still `running`.
   */
  replied(conversationId: string, source: string): void {
    this.replies.set(conversationId, source);
  }

  turnEnded(conversationId: string): void {
    const before = this.of(conversationId);
    bump(this.turns, conversationId, -1);
    const source = this.replies.get(conversationId);
    if (source === undefined) return this.announceIfChanged(conversationId, before);
    this.replies.delete(conversationId);
    this.onChange(conversationId, { source, stateChanged: this.changed(conversationId, before) });
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
    if (this.changed(conversationId, before)) this.onChange(conversationId);
  }

  private changed(conversationId: string, before: ConversationActivityState): boolean {
    const after = this.of(conversationId);
    return after.state !== before.state || after.pendingPermissions !== before.pendingPermissions;
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
