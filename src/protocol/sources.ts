/**
 * Where a session comes from (docs/design.md, "Words"): the editor, a LAN socket (`lan`), a relayed phone,
 * or a webhook account. A conversation, a turn and a permission request carry their session's source.
 * No imports: the web page bundles it too.
 */
export type Source = { kind: 'editor' | 'lan' | 'relay' } | { kind: 'webhook'; account: string };

// The stored and wire form of a source is its text: `editor`, `ws`, `relay`, `webhook:<account>`
// (conversations' `source` column, list_conversations, permission.request, turn.ended). These two
// functions are the only place that form is written or read.
const WEBHOOK_PREFIX = 'webhook:';
const TEXT_OF_KIND = { editor: 'editor', lan: 'ws', relay: 'relay' } as const;

/** A source's stored and wire text. */
export function sourceText(source: Source): string {
  return source.kind === 'webhook' ? `${WEBHOOK_PREFIX}${source.account}` : TEXT_OF_KIND[source.kind];
}

/** The source a stored or wire text names; undefined for a text this service never writes. */
function parseSource(text: string): Source | undefined {
  if (text.startsWith(WEBHOOK_PREFIX)) return { kind: 'webhook', account: text.slice(WEBHOOK_PREFIX.length) };
  if (text === 'editor' || text === 'relay') return { kind: text };
  if (text === 'ws') return { kind: 'lan' };
  return undefined;
}

/**
 * The source a stored text names. Any text this service never wrote reads as a LAN client's: like every
 * source but a webhook account's, it may see every conversation.
 */
export function sourceOf(text: string): Source {
  return parseSource(text) ?? { kind: 'lan' };
}

/** The webhook account a source is (a typed one, or its text), if it is one. */
export function webhookAccountOf(source: Source | string): string | undefined {
  const typed = typeof source === 'string' ? parseSource(source) : source;
  return typed?.kind === 'webhook' ? typed.account : undefined;
}

const LABEL_OF_KIND = { editor: 'editor', lan: 'LAN', relay: 'phone (relay)' } as const;

/** A source (typed, or its wire text) as people read it; a text it does not know (a newer service's), as it is. */
export function sourceLabel(source: Source | string): string {
  const typed = typeof source === 'string' ? parseSource(source) : source;
  if (typed === undefined) return String(source);
  return typed.kind === 'webhook' ? `webhook “${typed.account}”` : LABEL_OF_KIND[typed.kind];
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
 * webhook account is `webhook:<account>`, its source's text. Source and credential kind alone are not a
 * person: two password users share them.
 */
export function personOf(client: { id: string; source: Source; principal?: 'access' | 'session'; username?: string }): string {
  if (client.principal === 'access') return OWNER_PERSON;
  // A password session always names its user; one that does not is nobody else's (fails closed).
  if (client.principal === 'session') return client.username === undefined ? `session:${client.id}` : `user:${client.username}`;
  return sourceText(client.source);
}

/**
 * Who may see a conversation (its source's text). A webhook account sees only its own (docs/protocol.md:
 * another account's or the editor's conversation is not_found to it); the user's own clients (editor,
 * phone, LAN, relay) see every conversation, webhook ones included, so they appear in the editor live.
 */
export function canAccess(sessionSource: Source, conversationSource: string): boolean {
  return sessionSource.kind !== 'webhook' || sourceText(sessionSource) === conversationSource;
}
