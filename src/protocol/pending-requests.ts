/**
 * The permission requests waiting for an answer, as one client connection hears of them
 * (docs/protocol.md, "Permission requests"): `list_pending_permissions` after each authentication,
 * then `permission.request` and `permission.resolved`, whoever asked and whoever answers. The one
 * tracker of the clients: the phone's machine status and its prompt cards share one per machine, the
 * webview's cards have one, the editor's status bar and notifications another. It knows no socket: its
 * owner hands it the events and the list. Written without zod (types only), so the page bundles it.
 */
import type { ServiceEvent } from './events';
import type { PermissionRequest } from './permissions';

export type ResolvedEvent = Extract<ServiceEvent, { event: 'permission.resolved' }>;

/** What changed: a request to answer arrived, one was resolved (`event`), or one is gone without a word (not listed any more). */
export type PendingChange =
  | { kind: 'added'; request: PermissionRequest }
  | { kind: 'resolved'; requestId: string; request?: PermissionRequest; event: ResolvedEvent }
  | { kind: 'gone'; request: PermissionRequest }
  /** A list was taken in: everything known now is confirmed (or dropped). */
  | { kind: 'listed' };

/** Resolved ids remembered, so a late copy of their request never prompts again. */
const RESOLVED_REMEMBERED = 1_000;

export class PendingRequests {
  private readonly waiting = new Map<string, PermissionRequest>();
  /** Resolved (heard on this connection): a list or a re-sent event that still holds them must not bring them back. */
  private readonly resolved = new Set<string>();
  private readonly listeners = new Set<(change: PendingChange) => void>();

  /** Oldest first: the order they were asked in. */
  values(): PermissionRequest[] {
    return [...this.waiting.values()];
  }

  get(requestId: string): PermissionRequest | undefined {
    return this.waiting.get(requestId);
  }

  has(requestId: string): boolean {
    return this.waiting.has(requestId);
  }

  get size(): number {
    return this.waiting.size;
  }

  /** Answered or gone already (heard here): a late copy of its request must not prompt. */
  wasResolved(requestId: string): boolean {
    return this.resolved.has(requestId);
  }

  onChange(listener: (change: PendingChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A service event: `permission.request` and `permission.resolved` count, any other is ignored. */
  hear(event: { event: string }): void {
    const known = event as ServiceEvent;
    if (known.event === 'permission.request') {
      const { event: _event, seq: _seq, ...request } = known;
      this.add(request);
    } else if (known.event === 'permission.resolved') {
      this.resolved.add(known.request_id);
      if (this.resolved.size > RESOLVED_REMEMBERED) this.resolved.delete(this.resolved.values().next().value!);
      const request = this.waiting.get(known.request_id);
      this.waiting.delete(known.request_id);
      this.emit({ kind: 'resolved', requestId: known.request_id, ...(request ? { request } : {}), event: known });
    }
  }

  /**
   * Lists again (after an authentication): `list` resolves the service's list, `null` when the service
   * cannot list (an older one: its requests did not survive the drop), or undefined when the connection
   * dropped before the answer (what is known stays; the next authentication lists again). A request
   * known before the list and not in it was decided or expired meanwhile: it is gone. One that arrives
   * while the list is on its way is kept, whatever the list says.
   */
  async refresh(list: () => Promise<PermissionRequest[] | null | undefined>): Promise<void> {
    const before = new Set(this.waiting.keys());
    const requests = await list();
    if (requests === undefined) return;
    for (const request of requests ?? []) this.add(request);
    const listed = new Set((requests ?? []).map((request) => request.request_id));
    for (const id of before) {
      const request = this.waiting.get(id);
      if (!request || listed.has(id)) continue;
      this.waiting.delete(id);
      this.emit({ kind: 'gone', request });
    }
    this.emit({ kind: 'listed' });
  }

  /** Another connection (the editor follows another backend): what the previous one said no longer counts. */
  clear(): void {
    const requests = this.values();
    this.waiting.clear();
    this.resolved.clear();
    for (const request of requests) this.emit({ kind: 'gone', request });
  }

  private add(request: PermissionRequest): void {
    if (this.waiting.has(request.request_id) || this.resolved.has(request.request_id)) return;
    this.waiting.set(request.request_id, request);
    this.emit({ kind: 'added', request });
  }

  private emit(change: PendingChange): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch (error) {
        console.error(error);
      }
    }
  }
}
