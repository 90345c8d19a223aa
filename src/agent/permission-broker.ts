import { createHash, randomUUID } from 'node:crypto';
import { ServiceError, type AuditActor, type PermissionDecision, type PermissionRequest, type PermissionResolution, type ResultOf, type ServiceEvent } from '../protocol';
import type { Logger } from '../log/logger';
import { isOwnerClient } from '../protocol/sources';
import { canonicalJson, type NewAuditEntry, type Store } from '../store';
import type { ConversationActivity } from './conversation-activity';
import { auditDecisionText, conflictMessage } from './permission-texts';
import type { AskPermission, PermissionOutcome } from './permissions';
import { wirePreview } from './tools/preview';

type AudienceClient = { canAnswerPermissions: boolean; principal?: 'access' | 'session' };

/** Who answers a permission_response: may it answer an owner-only request, and how people name it. */
export interface Answerer {
  owner: boolean;
  /** Who answers, as people read it (commands/audit-actor.ts `sessionLabel`): a device's name, a user's, `editor`, `access token`. */
  label: string;
  /** Who and where, for the audit log (commands/audit-actor.ts); the answer is recorded with the request's resolution. */
  actor?: AuditActor;
}

/** The clients a request goes to (the service's event hub): only those that can answer are asked. */
export interface PermissionAudience {
  broadcast(event: ServiceEvent, filter?: (client: AudienceClient) => boolean): number;
}

export interface PermissionBrokerDeps {
  events: PermissionAudience;
  store: Pick<Store, 'permissionRequests' | 'conversations' | 'worktrees'>;
  logger: Logger;
  /** How long a new request waits (service.json's permission_timeout_seconds, or a test's override). */
  timeoutMs: () => number;
  activity?: ConversationActivity;
}

/** Decided requests are kept at least this long (and at least the timeout), for late answers. */
const KEEP_DECIDED_MIN_MS = 3_600_000;

/** setTimeout's limit (about 24.8 days); a longer permission_timeout_seconds re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** An outcome the broker settles: always one of the wire's reasons (a person, the timeout, a cancel, a stop). */
type Asked = PermissionOutcome & { reason: PermissionResolution };

interface Waiting {
  request: PermissionRequest;
  ownerOnly: boolean;
  /** The rule an `allow_always` answer adds (the gate's, computed once): told to whoever answers and in permission.resolved. */
  ruleIfAlways: string | undefined;
  /** What the call acts on (a path, a command line), for the audit log. */
  subject: string | undefined;
  settle(outcome: Asked): void;
}

/**
 * Asks people (docs/protocol.md, "Permission requests"): a request is stored, sent with the tool's
 * preview to every client that may answer (the editor is one), re-sent to each such client
 * when it authenticates, and waits for the first answer, connected clients or not, until the timeout
 * denies it. Later answers are told who decided (`conflict`, or `already_decided` for the same
 * answer). Decided requests stay in the store at least as long as the timeout.
 */
export class PermissionBroker {
  private readonly waiting = new Map<string, Waiting>();
  private stopping = false;

  constructor(private readonly deps: PermissionBrokerDeps) {}

  ask: AskPermission = async (question) => {
    const requestId = randomUUID();
    const ownerOnly = question.ownerAnswersPrompts === true;
    // The tool's own account of what it would do, shown in every prompt (docs/protocol.md, "Previews").
    const preview = await question.preview?.();
    // The chat may have been cancelled while the preview was worked out: no abort event comes then.
    if (question.signal.aborted) return { decision: 'deny', reason: 'cancelled' };
    if (this.stopping) return { decision: 'deny', reason: 'restarted' };
    const timeoutMs = this.deps.timeoutMs();
    const created = Date.now();
    const alwaysRule = question.ruleIfAlways;
    const worktree = this.deps.store.worktrees.get(question.conversationId);
    const request: PermissionRequest = {
      request_id: requestId,
      conversation_id: question.conversationId,
      conversation_title: this.deps.store.conversations.get(question.conversationId)?.title ?? '',
      source: question.source,
      ...(question.from !== undefined ? { from: question.from } : {}),
      tool: question.tool,
      arguments: question.arguments,
      ...(question.callId !== undefined ? { call_id: question.callId } : {}),
      ...(preview ? { preview: wirePreview(preview) } : {}),
      ...(alwaysRule !== undefined ? { always_rule: alwaysRule } : {}),
      ...(worktree ? { worktree: { branch: worktree.branch, path: worktree.path } } : {}),
      created_at: new Date(created).toISOString(),
      expires_at: new Date(created + timeoutMs).toISOString(),
    };
    const canAnswer = (client: AudienceClient) => mayAnswer(client, ownerOnly);
    // Stored before anyone hears of it: a restart from here on knows the turn waited.
    await this.deps.store.permissionRequests.add({ request, callId: question.callId, ownerOnly }, created - Math.max(timeoutMs, KEEP_DECIDED_MIN_MS));
    let settled: Promise<unknown> = Promise.resolve();
    let entry!: Waiting;
    const outcome = new Promise<Asked>((resolve) => {
      entry = {
        request,
        ownerOnly,
        ruleIfAlways: alwaysRule,
        subject: question.subject,
        settle: (result) => {
          if (this.waiting.get(requestId) !== entry) return;
          this.waiting.delete(requestId);
          // Applied to the store at once (a later answer reads it there), durable before the tool result is written;
          // a person's answer is recorded in the audit log in the same transaction.
          const resolution = { decision: result.decision, decidedBy: result.decidedBy, reason: result.reason, resolvedMs: Date.now() };
          const audit = result.reason === 'answered' && result.actor ? answerAuditEntry(entry, result, result.actor) : undefined;
          settled = this.deps.store.permissionRequests.resolve(requestId, resolution, audit).catch((error) => this.deps.logger.warn('permission.store_failed', { error }));
          resolve(result);
        },
      };
    });
    this.waiting.set(requestId, entry);
    this.deps.activity?.waitStarted(question.conversationId);
    const stopTimer = expireAfter(timeoutMs, () => entry.settle({ decision: 'deny', reason: 'expired', waitedMs: timeoutMs }));
    const onAbort = () => entry.settle({ decision: 'deny', reason: 'cancelled' });
    question.signal.addEventListener('abort', onAbort, { once: true });
    if (question.signal.aborted || this.stopping) entry.settle({ decision: 'deny', reason: this.stopping ? 'restarted' : 'cancelled' });
    try {
      this.deps.events.broadcast({ event: 'permission.request', ...request }, canAnswer);
      const result = await outcome;
      await settled;
      this.deps.events.broadcast(
        {
          event: 'permission.resolved',
          request_id: requestId,
          conversation_id: question.conversationId,
          decision: result.decision,
          ...(result.decidedBy ? { decided_by: result.decidedBy } : {}),
          reason: result.reason,
          ...(result.ruleAdded ? { rule_added: result.ruleAdded } : {}),
        },
        canAnswer,
      );
      this.deps.logger.info('permission.decided', { tool: question.tool, decision: result.decision, reason: result.reason, conversation: question.conversationId });
      return result;
    } finally {
      stopTimer();
      question.signal.removeEventListener('abort', onAbort);
      this.deps.activity?.waitEnded(question.conversationId);
    }
  };

  /**
   * A `permission_response`: the first answer to a waiting request wins. A
   * later one that agrees is `already_decided`; one that disagrees, or comes after the request expired
   * or ended, is a `conflict` saying so. A request of a session user's turn is the owner's to answer
   * (to anyone else it is `not_found`, as an unknown id), and so is `allow_always` (it adds the rule
   * `rule_added` names).
   */
  async answer(requestId: string, reply: { decision: PermissionDecision; note?: string }, answerer: Answerer): Promise<ResultOf<'permission_response'>> {
    const waiting = this.waiting.get(requestId);
    if (waiting) {
      requireMayAnswer(requestId, waiting.ownerOnly, answerer);
      // A rule binds every later call, of every client: only the owner may add one.
      if (reply.decision === 'allow_always' && !answerer.owner) {
        throw new ServiceError('unauthorized', 'allow_always adds a permission rule: only the owner (access token or the editor) may; answer allow or allow_conversation');
      }
      const note = reply.decision === 'deny' && reply.note?.trim() ? reply.note.trim() : undefined;
      // The model reads a note as the user's words: a session user must not steer the owner's turn with
      // one (its next call would again be the session user's to allow; its own turns' are the owner's).
      if (note && !answerer.owner) {
        throw new ServiceError('unauthorized', "a deny note is given to the model as the owner's words: only the owner (access token or the editor) may add one; deny without a note");
      }
      const ruleAdded = reply.decision === 'allow_always' ? waiting.ruleIfAlways : undefined;
      waiting.settle({
        decision: reply.decision,
        reason: 'answered',
        decidedBy: answerer.label,
        ...(note ? { note } : {}),
        ...(ruleAdded ? { ruleAdded } : {}),
        ...(answerer.actor ? { actor: answerer.actor } : {}),
      });
      return { request_id: requestId, decision: reply.decision, decided_by: answerer.label, already_decided: false, ...(ruleAdded ? { rule_added: ruleAdded } : {}) };
    }
    const row = this.deps.store.permissionRequests.get(requestId);
    if (!row?.resolution) throw unknownRequest(requestId);
    requireMayAnswer(requestId, row.ownerOnly, answerer);
    const { decision, decidedBy, reason } = row.resolution;
    if (reason === 'answered' && decision === reply.decision && decidedBy) {
      return { request_id: requestId, decision: reply.decision, decided_by: decidedBy, already_decided: true };
    }
    throw new ServiceError('conflict', conflictMessage(row));
  }

  /** The requests waiting now that `client` may answer (list_pending_permissions), oldest first. */
  pendingFor(client: AudienceClient): PermissionRequest[] {
    return [...this.waiting.values()].filter((w) => mayAnswer(client, w.ownerOnly)).map((w) => w.request);
  }

  /** A client just authenticated: it receives every waiting request it may answer. */
  resendTo(client: AudienceClient & { send(event: ServiceEvent): void }): void {
    for (const request of this.pendingFor(client)) client.send({ event: 'permission.request', ...request });
  }

  /**
   * The service stops: every wait ends now (denied, reason `restarted`, the turn ended) rather than
   * holding the stop for a person who may not come; a request asked meanwhile is denied the same way.
   */
  stop(): void {
    this.stopping = true;
    for (const waiting of [...this.waiting.values()]) waiting.settle({ decision: 'deny', reason: 'restarted' });
  }

  get pendingCount(): number {
    return this.waiting.size;
  }
}

/**
 * A person's answer as the audit log keeps it: the tool and what it acts on, the preview's hash (what the
 * person was shown), the decision, whether a note was given (its words are the person's to the model, not kept).
 */
function answerAuditEntry(waiting: Waiting, outcome: Asked, actor: AuditActor): NewAuditEntry {
  const { request } = waiting;
  const what = waiting.subject !== undefined ? `${request.tool} ${waiting.subject}` : request.tool;
  const extras = [outcome.ruleAdded ? `always: rule ${outcome.ruleAdded}` : '', outcome.note ? 'with a note' : ''].filter(Boolean).join('; ');
  return {
    kind: 'permission.answer',
    ...actor,
    conversation_id: request.conversation_id,
    summary: `${auditDecisionText(outcome.decision)} ${what}${extras ? ` (${extras})` : ''}`,
    detail: {
      request_id: request.request_id,
      tool: request.tool,
      subject: waiting.subject ?? null,
      source: request.source,
      preview_sha256: request.preview ? createHash('sha256').update(canonicalJson(request.preview)).digest('hex') : null,
      decision: outcome.decision,
      note_present: outcome.note !== undefined,
      ...(outcome.ruleAdded ? { rule: outcome.ruleAdded } : {}),
    },
  };
}

function mayAnswer(client: AudienceClient, ownerOnly: boolean): boolean {
  return client.canAnswerPermissions && (!ownerOnly || isOwnerClient(client));
}

/**
 * A request only the owner may answer (a session user's turn's) is never sent nor listed to anyone else:
 * to them it does not exist, the same answer as an unknown id (its existence is not told, s36).
 */
function requireMayAnswer(requestId: string, ownerOnly: boolean, answerer: Answerer): void {
  if (ownerOnly && !answerer.owner) throw unknownRequest(requestId);
}

function unknownRequest(requestId: string): ServiceError {
  return new ServiceError('not_found', `no permission request ${requestId}`);
}

/** Calls `fire` after `ms`, re-arming past setTimeout's limit; returns the cancel. */
function expireAfter(ms: number, fire: () => void): () => void {
  const deadline = Date.now() + ms;
  let timer: ReturnType<typeof setTimeout>;
  const arm = () => {
    const left = deadline - Date.now();
    timer = setTimeout(left > MAX_TIMER_MS ? arm : fire, Math.min(Math.max(left, 0), MAX_TIMER_MS));
  };
  arm();
  return () => clearTimeout(timer);
}
