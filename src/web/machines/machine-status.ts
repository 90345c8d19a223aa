/**
 * What one machine needs from the user, kept live from its connection whichever machine is on screen:
 * its prompts waiting (the connection's tracker, shared with its chat's prompt cards), whether a run is going (`list_conversations` rows, then
 * `conversation.updated`), and the runs that finished (`turn.ended`) since the user last looked at
 * their conversation (kept in the machine's storage, so a reload keeps them).
 */
import type { Conversation, ViewEvent } from '../../protocol';
import type { PendingRequests } from '../../protocol/pending-requests';
import type { ServiceConnection } from '../connection';
import type { MachineStorage } from './machine-store';

export interface FinishedRun {
  conversation_id: string;
  title: string;
  outcome: 'answered' | 'failed';
  at: string;
}

export type MachineState = 'online' | 'offline' | 'connecting';

const FINISHED_KEY = 'remote-assistant.finished';
/** The most finished runs remembered per machine (the oldest go first). */
const FINISHED_LIMIT = 50;

export class MachineStatus {
  private readonly rows = new Map<string, Conversation>();
  private finishedRuns: FinishedRun[];
  private readonly listeners = new Set<() => void>();
  /** The conversation this machine's chat shows while it is the one on screen (undefined: none, or another machine). */
  private looking: string | undefined;

  constructor(
    private readonly connection: ServiceConnection,
    private readonly storage: MachineStorage,
    /** The prompts waiting on this machine. */
    readonly waiting: PendingRequests,
  ) {
    this.finishedRuns = readFinished(storage);
    waiting.onChange(() => this.changed());
    connection.onState((state) => {
      if (state.state === 'open') void this.refresh();
      this.changed();
    });
    connection.onEvent((event) => this.onEvent(event));
  }

  get state(): MachineState {
    const { state, detail } = this.connection.state;
    if (state === 'open') return 'online';
    // An attempt under way (reaching the machine through the relay, securing the tunnel) is not yet
    // "offline"; a retry after a failure, a refusal or a machine away is.
    return state === 'connecting' && detail !== 'reconnecting' ? 'connecting' : 'offline';
  }

  /** Conversations with a turn going (running or waiting for a prompt). */
  get running(): number {
    return [...this.rows.values()].filter((row) => row.state !== 'idle').length;
  }

  get finished(): readonly FinishedRun[] {
    return this.finishedRuns;
  }

  title(conversationId: string): string | undefined {
    return this.rows.get(conversationId)?.title;
  }

  /** Whether this machine knows the conversation or request (a notification's link names no machine). */
  knows(link: { conversation?: string; request?: string }): boolean {
    return (link.request !== undefined && this.waiting.has(link.request)) || (link.conversation !== undefined && this.rows.has(link.conversation));
  }

  /** The user is looking at this conversation now (or at nothing of this machine): its finished run is seen. */
  look(conversationId: string | undefined): void {
    this.looking = conversationId;
    if (conversationId && this.finishedRuns.some((run) => run.conversation_id === conversationId)) {
      this.finishedRuns = this.finishedRuns.filter((run) => run.conversation_id !== conversationId);
      this.saveFinished();
      this.changed();
    }
  }

  /** "Clear finished": the finished runs are forgotten unseen. */
  clearFinished(): void {
    if (this.finishedRuns.length === 0) return;
    this.finishedRuns = [];
    this.saveFinished();
    this.changed();
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async refresh(): Promise<void> {
    try {
      const conversations = await this.connection.request({ type: 'list_conversations', limit: 100 });
      if (conversations.status === 'ok') {
        this.rows.clear();
        for (const row of conversations.data.conversations) this.rows.set(row.id, row);
      }
    } catch {
      // The connection dropped meanwhile: the next authentication lists again.
    }
    this.changed();
  }

  private onEvent(event: ViewEvent): void {
    switch (event.event) {
      case 'conversation.updated':
        this.rows.set(event.conversation_id, event.conversation);
        return this.changed();
      case 'turn.ended':
        if (event.outcome === 'cancelled' || this.seenNow(event.conversation_id)) return;
        this.finishedRuns = [
          ...this.finishedRuns.filter((run) => run.conversation_id !== event.conversation_id),
          { conversation_id: event.conversation_id, title: this.title(event.conversation_id) ?? 'Conversation', outcome: event.outcome, at: new Date().toISOString() },
        ].slice(-FINISHED_LIMIT);
        this.saveFinished();
        return this.changed();
    }
  }

  /** The run ended in front of the user: nothing to tell them later. */
  private seenNow(conversationId: string): boolean {
    return this.looking === conversationId && typeof document !== 'undefined' && document.visibilityState === 'visible';
  }

  private saveFinished(): void {
    this.storage.setItem(FINISHED_KEY, JSON.stringify(this.finishedRuns));
  }

  private changed(): void {
    for (const listener of [...this.listeners]) {
      try {
        listener();
      } catch (error) {
        console.error(error);
      }
    }
  }
}

function readFinished(storage: MachineStorage): FinishedRun[] {
  try {
    const value = JSON.parse(storage.getItem(FINISHED_KEY) ?? '[]') as unknown;
    return Array.isArray(value) ? value.filter((run): run is FinishedRun => typeof run?.conversation_id === 'string' && typeof run?.title === 'string') : [];
  } catch {
    return [];
  }
}
