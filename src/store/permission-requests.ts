import type { PermissionDecision, PermissionRequest, PermissionResolution } from '../protocol';
import type { AuditRepo, NewAuditEntry } from './audit';
import type { Database } from './database';
import type { MessagesRepo } from './messages';
import type { NewMessage } from './types';

export interface NewPermissionRequest {
  /** As clients see it (the `permission.request` event without `event`). */
  request: PermissionRequest;
  /** The tool call it asks about, so a restart can store that call's denied result. */
  callId?: string;
  /** Only the owner may answer it (a session user's turn). */
  ownerOnly: boolean;
}

export interface PermissionResolutionRecord {
  decision: PermissionDecision;
  decidedBy?: string;
  reason: PermissionResolution;
  resolvedMs: number;
}

export interface PermissionRequestRow {
  request: PermissionRequest;
  callId: string | null;
  ownerOnly: boolean;
  status: 'pending' | 'resolved';
  /** Set once resolved. */
  resolution: PermissionResolutionRecord | null;
}

interface RawRow {
  request: string;
  call_id: string | null;
  owner_only: number;
  status: 'pending' | 'resolved';
  decision: string | null;
  decided_by: string | null;
  reason: string | null;
  resolved_ms: number | null;
}

const COLUMNS = 'request, call_id, owner_only, status, decision, decided_by, reason, resolved_ms';

function toRow(raw: RawRow): PermissionRequestRow {
  return {
    request: JSON.parse(raw.request) as PermissionRequest,
    callId: raw.call_id,
    ownerOnly: raw.owner_only === 1,
    status: raw.status,
    resolution:
      raw.status === 'resolved'
        ? { decision: decisionOf(raw.decision), ...(raw.decided_by ? { decidedBy: raw.decided_by } : {}), reason: (raw.reason ?? 'answered') as PermissionResolution, resolvedMs: raw.resolved_ms ?? 0 }
        : null,
  };
}

/** A stored decision: rows written before the rename say `allow_session` for `allow_conversation`. */
function decisionOf(stored: string | null): PermissionDecision {
  return stored === 'allow_session' ? 'allow_conversation' : ((stored ?? 'deny') as PermissionDecision);
}

/**
 * Permission requests (docs/protocol.md, "Permission requests"): stored while they wait, so a restart
 * knows which turns it interrupted, and kept a while once decided, so a late answer is told who decided
 * rather than `not_found`.
 */
export class PermissionRequestsRepo {
  constructor(
    private readonly db: Database,
    private readonly audit: Pick<AuditRepo, 'record'>,
    /** Stores the denied results of requests a stopped service left waiting (finishInterrupted). */
    private readonly messages: Pick<MessagesRepo, 'insertIn'>,
  ) {}

  /** Stores a waiting request; decided ones resolved before `forgetResolvedBeforeMs` go in the same transaction. */
  async add(entry: NewPermissionRequest, forgetResolvedBeforeMs: number): Promise<void> {
    await this.db.write((tx) => {
      tx.run("DELETE FROM permission_requests WHERE status = 'resolved' AND resolved_ms < ?", [forgetResolvedBeforeMs]);
      tx.run('INSERT INTO permission_requests (request_id, conversation_id, call_id, owner_only, request, status) VALUES (?, ?, ?, ?, ?, ?)', [
        entry.request.request_id,
        entry.request.conversation_id,
        entry.callId ?? null,
        entry.ownerOnly ? 1 : 0,
        JSON.stringify(entry.request),
        'pending',
      ]);
    });
  }

  /** Records how a waiting request ended, with the person's answer in the audit log (same transaction); false if it was not waiting. */
  resolve(requestId: string, resolution: PermissionResolutionRecord, audit?: NewAuditEntry): Promise<boolean> {
    return this.db.write((tx) => {
      const changed =
        tx.run("UPDATE permission_requests SET status = 'resolved', decision = ?, decided_by = ?, reason = ?, resolved_ms = ? WHERE request_id = ? AND status = 'pending'", [
          resolution.decision,
          resolution.decidedBy ?? null,
          resolution.reason,
          resolution.resolvedMs,
          requestId,
        ]).changes > 0;
      if (changed && audit) this.audit.record(tx, audit);
      return changed;
    });
  }

  get(requestId: string): PermissionRequestRow | undefined {
    const raw = this.db.get<RawRow>(`SELECT ${COLUMNS} FROM permission_requests WHERE request_id = ?`, [requestId]);
    return raw && toRow(raw);
  }

  /** Every request still waiting, oldest first. */
  pending(): PermissionRequestRow[] {
    const rows = this.db.all<RawRow>(`SELECT ${COLUMNS} FROM permission_requests WHERE status = 'pending'`).map(toRow);
    return rows.sort((a, b) => a.request.created_at.localeCompare(b.request.created_at));
  }

  /**
   * Ends one conversation's requests that a stopped service left waiting, in one transaction: each gets
   * its `resolution` and `results` (the denied tool results) are stored with them, so the history never
   * holds one without the other. Results are skipped when the conversation was deleted meanwhile.
   */
  async finishInterrupted(conversationId: string, requestIds: readonly string[], resolution: PermissionResolutionRecord, results: readonly NewMessage[]): Promise<void> {
    await this.db.write((tx) => {
      const exists = tx.get<{ id: string }>('SELECT id FROM conversations WHERE id = ?', [conversationId]) !== undefined;
      if (exists) for (const message of results) this.messages.insertIn(tx, message);
      for (const requestId of requestIds) {
        tx.run("UPDATE permission_requests SET status = 'resolved', decision = ?, decided_by = NULL, reason = ?, resolved_ms = ? WHERE request_id = ? AND status = 'pending'", [
          resolution.decision,
          resolution.reason,
          resolution.resolvedMs,
          requestId,
        ]);
      }
    });
  }
}
