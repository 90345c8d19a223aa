import { webhookAccountsOf, type PermissionMode, type ServiceConfig } from '../../protocol';

const PREFIX = 'webhook:';

/** `webhook:<account>`: the conversations' source and owner (commands/session.ts ownerOf). */
export function webhookSource(account: string): string {
  return `${PREFIX}${account}`;
}

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
  if (source.startsWith(PREFIX)) return webhookAccountsOf(config).get(source.slice(PREFIX.length))?.tools ?? 'deny';
  if (conversationSource?.startsWith(PREFIX) && config.permission_mode === 'allow') return 'ask';
  return undefined;
}
