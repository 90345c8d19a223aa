import { webhookAccountsOf, type PermissionMode, type ServiceConfig } from '../protocol';

const PREFIX = 'webhook:';

/** `webhook:<account>`: the conversations' source and owner (commands/session.ts ownerOf). */
export function webhookSource(account: string): string {
  return `${PREFIX}${account}`;
}

/**
 * The permission mode for tools requested during a turn of `source`, when its text is untrusted: a
 * webhook account's `tools` (default `deny`; `deny` too for an account removed since), which replaces
 * `permission_mode` (decisions.md, "Text that arrives by webhook is untrusted"). Undefined for the
 * user's own clients, whose turns follow `permission_mode`.
 */
export function webhookToolMode(config: ServiceConfig, source: string): PermissionMode | undefined {
  if (!source.startsWith(PREFIX)) return undefined;
  return webhookAccountsOf(config).get(source.slice(PREFIX.length))?.tools ?? 'deny';
}
