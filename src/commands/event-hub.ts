import type { ServiceEvent } from '../protocol';
import { ConversationFeeds, type EventFilter, type FeedEvent } from './conversation-feed';
import type { ClientSession } from './session';

export type { EventFilter } from './conversation-feed';

/**
 * Events of a conversation that every client allowed hears, followers numbered (permission prompts,
 * turn.ended): also the events a Web Push may follow from (the push service observes these alone).
 */
export const ANNOUNCED: ReadonlySet<ServiceEvent['event']> = new Set(['permission.request', 'permission.resolved', 'turn.ended', 'changes.ready']);

/**
 * Sees every broadcast event before any client filter, with the filter the clients get it by: the push
 * notifier hears of a prompt even when no client is connected, and asks the filter whether a device's
 * subscriber could have answered it.
 */
export type EventObserver = (event: ServiceEvent, filter: EventFilter) => void;

const everyone: EventFilter = () => true;

/** The authenticated sessions, for events that go to everyone (config changes, new conversations). */
export class EventHub {
  private readonly sessions = new Set<ClientSession>();
  /** Each observer, with the events it taps (undefined: every event). */
  private readonly observers = new Map<EventObserver, ReadonlySet<ServiceEvent['event']> | undefined>();
  /** Who follows which conversation, and each conversation's numbered events (follow_conversation). */
  readonly feeds = new ConversationFeeds();

  add(session: ClientSession): () => void {
    this.sessions.add(session);
    return () => {
      this.sessions.delete(session);
      this.feeds.leave(session);
    };
  }

  /** Taps every broadcast event, or those of `kinds` (see EventObserver); returns the way to stop. */
  observe(observer: EventObserver, kinds?: ReadonlySet<ServiceEvent['event']>): () => void {
    this.observers.set(observer, kinds);
    return () => this.observers.delete(observer);
  }

  /**
   * Whether an event of this kind, broadcast with `filter`, would reach anyone (an observer or a
   * session): an event costly to make (conversation.updated reads its row) is not made for no one.
   */
  reaches(kind: ServiceEvent['event'], filter: EventFilter = everyone): boolean {
    for (const kinds of this.observers.values()) if (kinds === undefined || kinds.has(kind)) return true;
    for (const session of this.sessions) if (filter(session)) return true;
    return false;
  }

  broadcast(event: ServiceEvent, filter: EventFilter = everyone): number {
    // An observer's failure must not keep the event from the clients (it handles its own errors).
    for (const [observer, kinds] of this.observers) {
      if (kinds !== undefined && !kinds.has(event.event)) continue;
      try {
        observer(event, filter);
      } catch {
        // Ignored: see above.
      }
    }
    let sent = 0;
    // A conversation's prompt or end: its followers get it numbered (and kept for their catch-up), the others as it is.
    const conversationId = ANNOUNCED.has(event.event) ? (event as FeedEvent).conversation_id : undefined;
    if (conversationId !== undefined) this.feeds.publish(event as FeedEvent, { filter });
    for (const session of this.sessions) {
      if (!filter(session)) continue;
      if (conversationId !== undefined && this.feeds.follows(session, conversationId)) {
        sent += 1;
        continue;
      }
      session.send(event);
      sent += 1;
    }
    return sent;
  }

  /** After a config change: every session whose credential or address is no longer good leaves (closed). */
  recheckAll(): void {
    for (const session of [...this.sessions]) session.recheck?.();
  }

  /** Whether the session is still open (in the hub). */
  has(session: ClientSession): boolean {
    return this.sessions.has(session);
  }

  get size(): number {
    return this.sessions.size;
  }
}
