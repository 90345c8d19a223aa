/**
 * Who did something (sent a message, started a conversation, answered a permission), as the page names
 * them: nobody when it was this page's own credential (the hello's `acting_as`), else the name the
 * service stored (a device, a username, `editor`, a webhook account), never the credential's kind.
 */

/** What the service calls a client holding the owner's access token (commands/audit-actor.ts): a script or page on the computer. */
const ACCESS_TOKEN = 'access token';

/** The name to show for `from`; undefined: not known, or this page itself (shown without a sender). */
export function senderName(from: string | undefined, self: string | undefined): string | undefined {
  if (!from || from === self) return undefined;
  return from === ACCESS_TOKEN ? 'this computer' : from;
}
