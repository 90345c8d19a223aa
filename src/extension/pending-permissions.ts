import { EventEmitter } from 'node:events';
import type { ServiceEvent } from '../protocol';
import type { Backend } from './backend';

export type PermissionRequest = Omit<Extract<ServiceEvent, { event: 'permission.request' }>, 'event'>;

/**
 * The permission requests waiting for an answer, as this window's backend hears of them: the
 * service's list at connect (`list_pending_permissions`), then `permission.request` and
 * `permission.resolved`, whoever asked and whoever answers. The status bar counts them; the prompts
 * and Show Diff read a request's preview here.
 */
export class PendingPermissions extends EventEmitter<{ change: []; resolved: [requestId: string] }> {
  private readonly waiting = new Map<string, PermissionRequest>();
  /** Answered while the list was on its way: a list that still holds them must not bring them back. */
  private readonly resolved = new Set<string>();
  private backend: Backend | undefined;
  private readonly onEvent = (event: ServiceEvent) => {
    if (event.event === 'permission.request') {
      const { event: _event, ...request } = event;
      void _event;
      this.add([request]);
    } else if (event.event === 'permission.resolved') {
      this.resolved.add(event.request_id);
      if (this.resolved.size > 1_000) this.resolved.delete(this.resolved.values().next().value!);
      this.emit('resolved', event.request_id);
      if (this.waiting.delete(event.request_id)) this.emit('change');
    }
  };

  /** Follows another backend (hosting, attached, none): what the previous one said no longer counts. */
  setBackend(backend: Backend | undefined): void {
    this.backend?.off('event', this.onEvent);
    this.backend = backend;
    this.waiting.clear();
    this.resolved.clear();
    this.emit('change');
    if (!backend) return;
    backend.on('event', this.onEvent);
    void this.load(backend);
  }

  /** Oldest first: the order they were asked in. */
  list(): PermissionRequest[] {
    return [...this.waiting.values()];
  }

  get(requestId: string): PermissionRequest | undefined {
    return this.waiting.get(requestId);
  }

  /** Answered or gone already (heard on this backend): a late copy of its request must not prompt. */
  wasResolved(requestId: string): boolean {
    return this.resolved.has(requestId);
  }

  get count(): number {
    return this.waiting.size;
  }

  /**
   * Requests asked before this window connected. A service without the command (an older one)
   * answers an error: the events alone then say what waits.
   */
  private async load(backend: Backend): Promise<void> {
    const answer = await backend.request({ type: 'list_pending_permissions' }).catch(() => undefined);
    if (this.backend !== backend || answer?.status !== 'ok') return;
    const requests = (answer.data as { requests?: unknown } | undefined)?.requests;
    if (Array.isArray(requests)) this.add(requests.filter(isRequest));
  }

  private add(requests: PermissionRequest[]): void {
    let added = false;
    for (const request of requests) {
      if (this.waiting.has(request.request_id) || this.resolved.has(request.request_id)) continue;
      this.waiting.set(request.request_id, request);
      added = true;
    }
    if (added) this.emit('change');
  }

  dispose(): void {
    this.backend?.off('event', this.onEvent);
    this.backend = undefined;
    this.waiting.clear();
    this.removeAllListeners();
  }
}

function isRequest(value: unknown): value is PermissionRequest {
  const r = value as Partial<PermissionRequest> | null;
  return !!r && typeof r.request_id === 'string' && typeof r.conversation_id === 'string' && typeof r.tool === 'string';
}
