import { PUSH_KINDS, type PushKind, type PushPayload } from '../../protocol/push-payload';

/**
 * What a Web Push message asks the service worker to show (docs/protocol.md, "Web Push"): the payload
 * the service sends, and the notification made of it. Pure functions, no worker globals: the worker
 * (src/web/push-worker.ts) only calls the browser with the result.
 */

/** What the worker keeps on a notification, to act on a tap. */
export interface NotificationData {
  url: string;
  request_id?: string;
  conversation_id?: string;
}

export type NotificationPlan =
  | {
      show: true;
      title: string;
      options: { body: string; tag: string; renotify: boolean; requireInteraction: boolean; actions: { action: 'allow' | 'deny'; title: string }[]; data: NotificationData };
    }
  /** `resolved`: withdraw the notification of `tag` (answered or expired elsewhere), show nothing. */
  | { show: false; close: string };

const KINDS: readonly string[] = PUSH_KINDS;

/** Texts of a content-blind device: nothing of the conversation leaves the tunnel. */
const BLIND_TITLE: Record<PushKind, string> = {
  prompt: 'Remote Assistant needs you',
  resolved: '',
  finished: 'Remote Assistant: a run finished',
  failed: 'Remote Assistant: a run finished',
  webhook: 'Remote Assistant: a run finished',
  review: 'Remote Assistant: changes ready for review',
  test: 'Remote Assistant: test notification',
};
const BLIND_BODY = 'Open to see the details.';

/** Parses the push message's text; undefined when it is not a payload of version 1 (then nothing is shown but a generic note). */
export function parsePayload(text: string | undefined): PushPayload | undefined {
  if (!text) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const p = value as Record<string, unknown>;
  if (p.v !== 1 || typeof p.kind !== 'string' || !KINDS.includes(p.kind) || typeof p.tag !== 'string') return undefined;
  const text_ = (key: string) => (typeof p[key] === 'string' ? (p[key] as string) : undefined);
  return {
    v: 1,
    kind: p.kind as PushKind,
    tag: p.tag,
    conversation_id: text_('conversation_id'),
    request_id: text_('request_id'),
    title: text_('title'),
    body: text_('body'),
    url: text_('url'),
    blind: p.blind === true,
  };
}

/**
 * The page to open for a payload, relative to the worker's scope: the service's `url` when it is one
 * of the page's own (`./?...`), else built from the ids (content-blind payloads carry no url).
 */
export function targetUrl(payload: Pick<PushPayload, 'url' | 'conversation_id' | 'request_id'> & { kind?: PushPayload['kind'] }): string {
  if (payload.url && /^\.\/(\?|$)/.test(payload.url)) return payload.url;
  const query = new URLSearchParams();
  if (payload.conversation_id) query.set('conversation', payload.conversation_id);
  if (payload.request_id) query.set('request', payload.request_id);
  // "Ready for review" opens the conversation's Changes view (a content-blind one carries only the ids).
  if (payload.kind === 'review' && payload.conversation_id) query.set('view', 'changes');
  const text = query.toString();
  return text ? `./?${text}` : './';
}

export function planNotification(payload: PushPayload): NotificationPlan {
  if (payload.kind === 'resolved') return { show: false, close: payload.tag };
  const prompt = payload.kind === 'prompt';
  const blind = payload.blind === true;
  const title = blind ? BLIND_TITLE[payload.kind] : payload.title || BLIND_TITLE[payload.kind];
  const body = blind ? BLIND_BODY : (payload.body ?? '');
  return {
    show: true,
    title,
    options: {
      body,
      tag: payload.tag,
      // A second prompt in one conversation replaces the first under the same tag: ring again for it.
      renotify: prompt,
      requireInteraction: prompt,
      // Allow / Deny straight from the notification, but never for a request the user cannot see (content-blind).
      actions:
        prompt && !blind && payload.request_id
          ? [
              { action: 'allow', title: 'Allow' },
              { action: 'deny', title: 'Deny' },
            ]
          : [],
      data: { url: targetUrl(payload), request_id: payload.request_id, conversation_id: payload.conversation_id },
    },
  };
}

/**
 * The page to open for a tap: the notification's url, and for an action (`allow` / `deny`) the answer
 * the page gives once it has authenticated (the worker holds no credential).
 */
export function clickUrl(data: Partial<NotificationData> | undefined, action: string): string {
  const url = new URL(targetUrl(data ?? {}), 'https://page.invalid/');
  if ((action === 'allow' || action === 'deny') && data?.request_id) {
    url.searchParams.set('request', data.request_id);
    url.searchParams.set('answer', action);
  }
  return `.${url.pathname}${url.search}`;
}
