import { randomUUID } from 'node:crypto';
import { ServiceError, type PermissionDecision, type ServiceEvent } from '../protocol';
import type { Logger } from '../log/logger';
import { isOwnerClient } from '../protocol/sources';
import { narrowestRule, type PermissionQuestion } from './permissions';
import { wirePreview } from './tools/preview';
import type { ToolPreview } from './tools/types';

type AudienceClient = { canAnswerPermissions: boolean; principal?: 'access' | 'session'; source: string };

/** Who answers a permission_response: may it answer a request that only the owner may answer? */
export interface Answerer {
  owner: boolean;
}

/** The clients a request goes to (the service's event hub): only those that can answer are asked. */
export interface PermissionAudience {
  broadcast(event: ServiceEvent, filter?: (client: AudienceClient) => boolean): number;
  some(predicate: (client: AudienceClient) => boolean): boolean;
}

export const PERMISSION_TIMEOUT_MS = 120_000;

/** A prompt shown by the host itself (the editor's modal), raced with the remote clients. */
export type LocalPrompt = (request: { requestId: string; question: PermissionQuestion; preview?: ToolPreview }, signal: AbortSignal) => Promise<PermissionDecision | undefined>;

interface Pending {
  resolve: (decision: PermissionDecision) => void;
  conversationSource: string;
  ownerOnly: boolean;
  /** The rule an `allow_always` answer adds (the gate writes it): told to whoever answers and in permission.resolved. */
  ruleIfAlways: string | undefined;
}

/**
 * Asks people: sends `permission.request`, with the tool's preview, to every authenticated client that
 * may answer (and the host's own prompt, if any); the first answer wins, the others are told it was
 * resolved; no answer in 120 s, or nobody able to answer, denies (docs/protocol.md). Webhook
 * conversations are never asked of a webhook (nobody is behind it), so in `ask` mode they are denied
 * unless a person answers.
 */
export class PermissionBroker {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly events: PermissionAudience,
    private readonly logger: Logger,
    private readonly options: { timeoutMs?: number; localPrompt?: () => LocalPrompt | undefined } = {},
  ) {}

  ask = async (question: PermissionQuestion): Promise<PermissionDecision> => {
    const requestId = randomUUID();
    const localPrompt = this.options.localPrompt?.();
    const ownerOnly = question.ownerAnswersPrompts === true;
    const canAnswer = (s: AudienceClient) => s.canAnswerPermissions && (!ownerOnly || isOwnerClient(s));
    if (!localPrompt && !this.events.some(canAnswer)) {
      this.logger.info('permission.denied_nobody_to_ask', { tool: question.tool, conversation: question.conversationId });
      return 'deny';
    }
    // The tool's own account of what it would do, shown in every prompt (docs/protocol.md, "Previews").
    const preview = await question.preview?.();
    const settle = new AbortController();
    const ruleIfAlways = narrowestRule(question.tool, question.subject);
    const decision = new Promise<PermissionDecision>((resolve) => {
      this.pending.set(requestId, { resolve, conversationSource: question.source, ownerOnly, ruleIfAlways });
      const timer = setTimeout(() => resolve('deny'), this.options.timeoutMs ?? PERMISSION_TIMEOUT_MS);
      const onAbort = () => resolve('deny');
      // The chat may have been cancelled while the preview was worked out: no abort event comes then.
      if (question.signal.aborted) resolve('deny');
      question.signal.addEventListener('abort', onAbort, { once: true });
      settle.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        question.signal.removeEventListener('abort', onAbort);
      });
    });
    this.events.broadcast(
      {
        event: 'permission.request',
        request_id: requestId,
        conversation_id: question.conversationId,
        source: question.source,
        tool: question.tool,
        arguments: question.arguments,
        ...(preview ? { preview: wirePreview(preview) } : {}),
      },
      canAnswer,
    );
    localPrompt?.({ requestId, question, preview }, settle.signal).then(
      (answer) => answer && this.answer(requestId, answer),
      (error) => this.logger.warn('permission.prompt_failed', { error }),
    );
    const result = await decision;
    const ruleAdded = result === 'allow_always' ? ruleIfAlways : undefined;
    this.pending.delete(requestId);
    settle.abort();
    this.events.broadcast({ event: 'permission.resolved', request_id: requestId, decision: result, ...(ruleAdded ? { rule_added: ruleAdded } : {}) }, canAnswer);
    this.logger.info('permission.decided', { tool: question.tool, decision: result, conversation: question.conversationId });
    return result;
  };

  /**
   * A `permission_response` (or the host's own prompt, the owner): the first answer to a request wins;
   * later ones are not_found. A request of a session user's turn is the owner's to answer, and so is
   * `allow_always`. Returns the rule an `allow_always` adds.
   */
  answer(requestId: string, decision: PermissionDecision, answerer: Answerer = { owner: true }): { rule_added?: string } {
    const pending = this.pending.get(requestId);
    if (!pending) throw new ServiceError('not_found', `no pending permission request ${requestId}`);
    if (pending.ownerOnly && !answerer.owner) {
      throw new ServiceError('unauthorized', 'this request comes from a session user\'s turn: only the owner (access token or the editor) may answer it');
    }
    // A rule binds every later call, of every client: only the owner may add one.
    if (decision === 'allow_always' && !answerer.owner) {
      throw new ServiceError('unauthorized', 'allow_always adds a permission rule: only the owner (access token or the editor) may; answer allow or allow_session');
    }
    this.pending.delete(requestId);
    pending.resolve(decision);
    return decision === 'allow_always' && pending.ruleIfAlways ? { rule_added: pending.ruleIfAlways } : {};
  }

  get pendingCount(): number {
    return this.pending.size;
  }
}
