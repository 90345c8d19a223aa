import type { ServiceEvent } from '../protocol';
import type { ClientSession } from './session';

/** The authenticated sessions, for events that go to everyone (config changes, new conversations). */
export class EventHub {
  private readonly sessions = new Set<ClientSession>();

  add(session: ClientSession): () => void {
    this.sessions.add(session);
    return () => this.sessions.delete(session);
  }

  broadcast(event: ServiceEvent, filter: (session: ClientSession) => boolean = () => true): number {
    let sent = 0;
    for (const session of this.sessions) {
      if (!filter(session)) continue;
      session.send(event);
      sent += 1;
    }
    return sent;
  }

  /** After a config change: every session whose credential or address is no longer good leaves (closed). */
  recheckAll(): void {
    for (const session of [...this.sessions]) session.recheck?.();
  }

  get size(): number {
    return this.sessions.size;
  }
}
