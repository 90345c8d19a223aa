import { EventEmitter } from 'node:events';
import type { PermissionRequest, ServiceEvent } from '../protocol';
import { PendingRequests } from '../protocol/pending-requests';
import type { Backend } from './backend';

/**
 * The permission requests waiting for an answer, as this window's backend hears of them: the clients'
 * one tracker (protocol/pending-requests.ts) fed by the backend in force, whoever asked and whoever
 * answers. The status bar counts them; the prompts and Show Diff read a request's preview here.
 */
export class PendingPermissions extends EventEmitter<{ change: []; resolved: [requestId: string] }> {
  private readonly tracker = new PendingRequests();
  private backend: Backend | undefined;
  private readonly onEvent = (event: ServiceEvent) => this.tracker.hear(event);

  constructor() {
    super();
    this.tracker.onChange((change) => {
      if (change.kind === 'resolved') this.emit('resolved', change.requestId);
      if (change.kind !== 'listed') this.emit('change');
    });
  }

  /** Follows another backend (hosting, attached, none): what the previous one said no longer counts. */
  setBackend(backend: Backend | undefined): void {
    this.backend?.off('event', this.onEvent);
    this.backend = backend;
    this.tracker.clear();
    this.emit('change');
    if (!backend) return;
    backend.on('event', this.onEvent);
    void this.tracker.refresh(() => this.listOf(backend));
  }

  /** Oldest first: the order they were asked in. */
  list(): PermissionRequest[] {
    return this.tracker.values();
  }

  get(requestId: string): PermissionRequest | undefined {
    return this.tracker.get(requestId);
  }

  /** Answered or gone already (heard on this backend): a late copy of its request must not prompt. */
  wasResolved(requestId: string): boolean {
    return this.tracker.wasResolved(requestId);
  }

  get count(): number {
    return this.tracker.size;
  }

  /**
   * Requests asked before this window connected. A service without the command (an older one)
   * answers an error: the events alone then say what waits.
   */
  private async listOf(backend: Backend): Promise<PermissionRequest[] | undefined> {
    const answer = await backend.request({ type: 'list_pending_permissions' }).catch(() => undefined);
    if (this.backend !== backend || answer?.status !== 'ok') return undefined;
    const requests = (answer.data as { requests?: unknown } | undefined)?.requests;
    return Array.isArray(requests) ? requests.filter(isRequest) : undefined;
  }

  dispose(): void {
    this.backend?.off('event', this.onEvent);
    this.backend = undefined;
    this.removeAllListeners();
    this.tracker.clear();
  }
}

function isRequest(value: unknown): value is PermissionRequest {
  const r = value as Partial<PermissionRequest> | null;
  return !!r && typeof r.request_id === 'string' && typeof r.conversation_id === 'string' && typeof r.tool === 'string';
}
