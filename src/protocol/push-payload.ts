/**
 * What a Web Push message carries from the service to the page's service worker (docs/protocol.md, "Web
 * Push"): written by channels/push/push-payloads.ts, read by web/push/payload.ts. No imports: the
 * service worker bundles it.
 */

/** What a push is about; `resolved` withdraws a prompt's notification. */
export const PUSH_KINDS = ['prompt', 'resolved', 'finished', 'failed', 'webhook', 'test'] as const;
export type PushKind = (typeof PUSH_KINDS)[number];

/** The decrypted payload: `{v: 1, kind, tag, ...}`; content-blind devices get `blind: true` and no text. */
export interface PushPayload {
  v: 1;
  kind: PushKind;
  tag: string;
  conversation_id?: string;
  request_id?: string;
  title?: string;
  body?: string;
  url?: string;
  blind?: boolean;
}
