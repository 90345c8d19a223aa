import { webhookAccountsOf, type PermissionMode, type ServiceConfig } from '../protocol';
import { webhookAccountOf } from '../protocol/sources';

/**
 * The permission mode for a tool the model asks for when untrusted text is in its context (docs/protocol.md,
 * "Text that arrives by webhook is untrusted"), replacing `permission_mode`:
 * - a webhook account's turn: the account's `tools` (default `deny`; `deny` too for an account removed
 *   since, or when the config names no channels);
 * - the user's own turn in a webhook conversation (`conversationSource`): its history holds the webhook's
 *   text, which may try to steer the model, so `allow` becomes `ask` (the user is there to answer).
 * Undefined otherwise: the turn follows `permission_mode`.
 */
export function untrustedToolMode(
  config: Pick<ServiceConfig, 'permission_mode'> & Partial<Pick<ServiceConfig, 'channels'>>,
  source: string,
  conversationSource: string | undefined,
): PermissionMode | undefined {
  const account = webhookAccountOf(source);
  if (account !== undefined) return (config.channels ? webhookAccountsOf({ channels: config.channels }).get(account)?.tools : undefined) ?? 'deny';
  if (conversationSource !== undefined && webhookAccountOf(conversationSource) !== undefined && config.permission_mode === 'allow') return 'ask';
  return undefined;
}
