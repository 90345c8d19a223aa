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

/** The person of the owner: the access token, the editor, and every device the owner paired. */
export const OWNER_PERSON = 'owner';

/**
 * Who is behind a client, as one key for everything that is a person's own (docs/protocol.md, "People"):
 * an unsent upload, a message waiting in a queue, the answer to a resend, a push device. The owner is one
 * person on every transport: the access token, the editor, and a paired device (only the owner pairs
 * one, and its session has the owner's rights); each password user is another (`user:<username>`); a
 * webhook account is `webhook:<account>`, its source. Source and credential kind alone are not a person:
 * two password users share them.
 */
export function personOf(client: { id: string; source: string; principal?: 'access' | 'session'; username?: string }): string {
  if (client.principal === 'access') return OWNER_PERSON;
  // A password session always names its user; one that does not is nobody else's (fails closed).
  if (client.principal === 'session') return client.username === undefined ? `session:${client.id}` : `user:${client.username}`;
  return client.source;
}

/**
 * Who may see a conversation. A webhook account sees only its own (docs/protocol.md: another account's or
 * the editor's conversation is not_found to it); the user's own clients (editor, phone, LAN, relay) see
 * every conversation, webhook ones included, so they appear in the editor live.
 */
export function canAccess(sessionSource: string, conversationSource: string): boolean {
  return !sessionSource.startsWith('webhook:') || sessionSource === conversationSource;
}
