/**
 * The phone page's service worker (built to media/sw.js, served beside the page so its scope is the
 * page's folder). It shows Web Push notifications (docs/protocol.md, "Web Push") and turns a tap into
 * the page: it never holds the token, so an Allow / Deny tapped on a notification is answered by the
 * page once it has authenticated (`?answer=allow&request=<id>`).
 *
 * Chrome subscribes with userVisibleOnly: every push must show a notification. A `resolved` push only
 * withdraws one (answered elsewhere), which Chrome tolerates now and then; the service sends it only
 * for a prompt it pushed.
 */
import { clickUrl, parsePayload, planNotification, type NotificationData } from './push/payload';
import { OPEN_MESSAGE, type OpenMessage } from './push/open-message';
import { recordTap } from './push/tap-tokens';

// The worker's globals, declared here: the project's `lib` is the page's DOM, not the worker's.
interface ExtendableEvent extends Event {
  waitUntil(promise: Promise<unknown>): void;
}
interface PushEvent extends ExtendableEvent {
  readonly data: { text(): string } | null;
}
interface NotificationEvent extends ExtendableEvent {
  readonly action: string;
  readonly notification: Notification;
}
interface WindowClient {
  readonly url: string;
  focus(): Promise<WindowClient>;
  postMessage(message: unknown): void;
}
interface WorkerScope {
  readonly registration: ServiceWorkerRegistration;
  readonly location: { readonly href: string };
  readonly clients: {
    matchAll(options: { type: 'window'; includeUncontrolled: boolean }): Promise<readonly WindowClient[]>;
    openWindow(url: string): Promise<WindowClient | null>;
    claim(): Promise<void>;
  };
  skipWaiting(): Promise<void>;
  addEventListener(type: 'push', listener: (event: PushEvent) => void): void;
  addEventListener(type: 'notificationclick', listener: (event: NotificationEvent) => void): void;
  addEventListener(type: 'install' | 'activate', listener: (event: ExtendableEvent) => void): void;
}
const worker = self as unknown as WorkerScope;

// A new version takes over at once: the worker keeps no state an old page relies on.
worker.addEventListener('install', (event) => event.waitUntil(worker.skipWaiting()));
worker.addEventListener('activate', (event) => event.waitUntil(worker.clients.claim()));

worker.addEventListener('push', (event) => event.waitUntil(onPush(event)));
worker.addEventListener('notificationclick', (event) => event.waitUntil(onClick(event)));

/**
 * Paths of the page's folder (where sw.js is served). The worker may be registered for the page's folder
 * or for one paired machine (scope `<folder>/machine/<slot>/`, its own push subscription: each machine
 * has its own VAPID key); the page and its files are always the folder's.
 */
const scopeUrl = (path: string) => new URL(path, new URL('./', worker.location.href)).href;
/** The machine this registration pushes for (its scope's slot), if it is one machine's. */
const machineSlot = /\/machine\/([\w-]{1,64})\/$/.exec(new URL(worker.registration.scope).pathname)?.[1];

async function onPush(event: PushEvent): Promise<void> {
  let text: string | undefined;
  try {
    text = event.data?.text();
  } catch {
    text = undefined;
  }
  const payload = parsePayload(text);
  if (!payload) {
    // Not ours to read (a newer payload version?): still visible, as Chrome requires, and harmless.
    await worker.registration.showNotification('Remote Assistant', {
      body: 'Open to see what happened.',
      tag: 'unknown',
      data: { url: './' } satisfies NotificationData,
      icon: scopeUrl('icon-192.png'),
    });
    return;
  }
  const plan = planNotification(payload);
  if (!plan.show) {
    for (const notification of await worker.registration.getNotifications({ tag: plan.close })) notification.close();
    return;
  }
  await worker.registration.showNotification(plan.title, { ...plan.options, icon: scopeUrl('icon-192.png'), badge: scopeUrl('icon-192.png') } as NotificationOptions);
}

async function onClick(event: NotificationEvent): Promise<void> {
  const notification = event.notification;
  notification.close();
  const data = notification.data as Partial<NotificationData> | undefined;
  const target = withMachine(scopeUrl(clickUrl(data, event.action)));
  const page = await openPage();
  if (page) {
    // The page authenticates on its own; it takes the target (and the answer) from this message.
    page.postMessage({ type: OPEN_MESSAGE, url: target } satisfies OpenMessage);
    await page.focus().catch(() => undefined);
    return;
  }
  // A URL could be typed by anyone: its answer counts only with the proof of this tap (tap-tokens.ts).
  const answer = event.action === 'allow' || event.action === 'deny' ? event.action : undefined;
  if (answer && data?.request_id) {
    const url = new URL(target);
    url.searchParams.set('tap', await recordTap(scopeUrl('./'), data.request_id, answer));
    return void (await worker.clients.openWindow(url.href));
  }
  await worker.clients.openWindow(target);
}

/** A tap on one machine's notification opens the page on that machine (`&machine=<slot>`). */
function withMachine(target: string): string {
  if (!machineSlot) return target;
  const url = new URL(target);
  url.searchParams.set('machine', machineSlot);
  return url.href;
}

/** An open window of the page itself (not another file of the scope), if any. */
async function openPage(): Promise<WindowClient | undefined> {
  const pages = [scopeUrl('./'), scopeUrl('phone.html')];
  const windows = await worker.clients.matchAll({ type: 'window', includeUncontrolled: true });
  return windows.find((client) => pages.includes(client.url.split(/[?#]/)[0]));
}
