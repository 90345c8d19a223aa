import type { RelayLinkStatus, WebsocketChannel } from '../../protocol';
import { RelayLink, type RelayLinkDeps } from './relay-link';

export type RelayLinksDeps = Omit<RelayLinkDeps, 'channel'> & {
  /** The `websocket` channels of the current service.json. */
  channels: () => WebsocketChannel[];
};

/**
 * One RelayLink per `websocket` channel, following service.json: a channel added starts a link, one
 * removed stops it, one whose url or token changed is reconnected; unchanged links are left alone.
 */
export class RelayLinks {
  private readonly links = new Map<string, { key: string; link: RelayLink }>();
  private running = false;

  constructor(private readonly deps: RelayLinksDeps) {}

  start(): void {
    this.running = true;
    this.reconcile();
  }

  /** Applies the current channels (called on every config change). */
  reconcile(): void {
    if (!this.running) return;
    const wanted = new Map(this.deps.channels().map((channel) => [channel.name, channel]));
    for (const [name, entry] of this.links) {
      const channel = wanted.get(name);
      if (!channel || keyOf(channel) !== entry.key) {
        entry.link.stop();
        this.links.delete(name);
      }
    }
    for (const [name, channel] of wanted) {
      if (this.links.has(name)) continue;
      const link = new RelayLink({ ...this.deps, channel });
      this.links.set(name, { key: keyOf(channel), link });
      link.start();
    }
  }

  stop(): void {
    this.running = false;
    for (const { link } of this.links.values()) link.stop();
    this.links.clear();
  }

  status(): RelayLinkStatus[] {
    return [...this.links.values()].map(({ link }) => link.status());
  }
}

const keyOf = (channel: WebsocketChannel) => JSON.stringify([channel.url, channel.auth_token]);
