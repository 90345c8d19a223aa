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
 * Whether a client is the owner (docs/protocol.md, "Roles"): it authenticated with the access token, or
 * it is the editor hosting the service. A session (password) user is not.
 */
export function isOwnerClient(client: { principal?: 'access' | 'session'; source: string }): boolean {
  return client.principal === 'access' || (client.principal === undefined && client.source === 'editor');
}

/**
 * Who may see a conversation. A webhook account sees only its own (docs/protocol.md: another account's or
 * the editor's conversation is not_found to it); the user's own clients (editor, phone, LAN, relay) see
 * every conversation, webhook ones included, so they appear in the editor live.
 */
export function canAccess(sessionSource: string, conversationSource: string): boolean {
  return !sessionSource.startsWith('webhook:') || sessionSource === conversationSource;
}
