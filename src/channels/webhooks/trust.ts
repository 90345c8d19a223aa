import { webhookAccountsOf, type PermissionMode, type ServiceConfig } from '../../protocol';
import type { Store } from '../../store';
import { webhookAccountOf } from '../../protocol/sources';

/**
 * The permission mode for a tool the model asks for when untrusted text is in its context (docs/protocol.md,
 * "Text that arrives by webhook is untrusted"), replacing `permission_mode`:
 * - a webhook account's turn: the account's `tools` (default `deny`; `deny` too for an account removed
 *   since);
 * - the user's own turn in a webhook conversation (`conversationSource`): its history holds the webhook's
 *   text, which may try to steer the model, so `allow` becomes `ask` (the user is there to answer).
 * Undefined otherwise: the turn follows `permission_mode`.
 */
export function untrustedToolMode(config: ServiceConfig, source: string, conversationSource: string | undefined): PermissionMode | undefined {
  const account = webhookAccountOf(source);
  if (account !== undefined) return webhookAccountsOf(config).get(account)?.tools ?? 'deny';
  if (conversationSource !== undefined && webhookAccountOf(conversationSource) !== undefined && config.permission_mode === 'allow') return 'ask';
  return undefined;
}

/** untrustedToolMode for the permission gate's questions: the config in force, the conversation's stored source. */
export function untrustedToolPolicy(config: () => ServiceConfig, conversations: Store['conversations']) {
  return (question: { source: string; conversationId: string }): PermissionMode | undefined =>
    untrustedToolMode(config(), question.source, conversations.get(question.conversationId)?.source);
}
