/**
 * A source (`editor`, `ws`, `relay`, `webhook:<account>`: where a conversation or a permission request
 * came from) as people read it. No imports: the web page bundles it too.
 */
export function sourceLabel(source: string): string {
  if (source === 'editor') return 'editor';
  if (source === 'ws') return 'LAN';
  if (source === 'relay') return 'phone (relay)';
  if (source.startsWith('webhook:')) return `webhook “${source.slice('webhook:'.length)}”`;
  return source;
}

/**
 * Whether a client is the owner (docs/protocol.md, "Roles"): it holds the access token (the editor
 * hosting the service opens its sessions with that principal). A session (password) user is not, nor
 * is a client without a principal (a webhook account).
 */
export function isOwnerClient(client: { principal?: 'access' | 'session' }): boolean {
  return client.principal === 'access';
}

/**
 * Who may see a conversation. A webhook account sees only its own (docs/protocol.md: another account's or
 * the editor's conversation is not_found to it); the user's own clients (editor, phone, LAN, relay) see
 * every conversation, webhook ones included, so they appear in the editor live.
 */
export function canAccess(sessionSource: string, conversationSource: string): boolean {
  return !sessionSource.startsWith('webhook:') || sessionSource === conversationSource;
}
