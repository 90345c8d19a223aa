/**
 * The phone page: the chat app over a WebSocket to each paired machine's service. Pairings (one per
 * machine, machines/machine-store.ts) come from a pairing link's fragment, which adds the machine beside
 * the others, then from localStorage. Every machine keeps its own connection, chat (conversation on
 * screen, outbox, last seen numbers) and status, whichever is on screen; the switcher shows them all
 * and one list of what needs the user. Without a pairing it shows how to pair.
 */
import { ChatApp } from './chat/app';
import { h } from './chat/dom';
import { connectMachine, storedPairing } from './machines/machine-connection';
import type { MachineEntry } from './machines/machine-entry';
import { MachineStatus } from './machines/machine-status';
import { followPending } from './pending-wire';
import { answerText } from './permission-answer-text';
import { machineIdOf, MachineStore, type Machine } from './machines/machine-store';
import { MachineSwitcher } from './machines/machine-switcher';
import { defaultUrl, nameOfFragment, parseFragment, readPairingLink, unreachableFrom } from './pairing';
import { tryPairing } from './machines/try-pairing';
import { ActivityView } from './activity-view';
import { DevicesSection } from './devices-section';
import { DeepLinks, onWorkerLink, readDeepLink, type DeepLink } from './push/deep-link';
import { deviceId } from './push/device';
import { NotificationSettings } from './push/notification-settings';
import { reportVisibility } from './push/visibility';
import { registerPushWorker } from './push/worker-registration';
import type { WebSocketConnection } from './websocket-connection';
import { openKeptFiles, type KeptFileStore } from './chat/kept-files';

const CONVERSATION_KEY = 'remote-assistant.conversation';
/** How long a notification's link waits for a machine to say it knows the conversation. */
const LINK_RESOLVE_MS = 15_000;
const root = document.getElementById('app') ?? document.body.appendChild(document.createElement('div'));

// The page's own worker (its folder's scope); each machine registers one more for its own pushes.
void registerPushWorker();
const store = new MachineStore();
/** The bytes of files attached and not yet sent, every machine's (IndexedDB): read before the machines' chats start. */
let files: KeptFileStore | undefined;

interface MachineView extends MachineEntry {
  connection: WebSocketConnection;
  element: HTMLElement;
  /** Where the switcher's button sits in this machine's top bar. */
  slot: HTMLElement;
  links: DeepLinks;
  notifications: NotificationSettings;
  /** This machine's own push worker registration (its own subscription, for its own VAPID key). */
  worker: Promise<ServiceWorkerRegistration | undefined>;
}

const views = new Map<string, MachineView>();
const switcher = new MachineSwitcher({
  select: (id) => show(id),
  rename: (id) => {
    const name = prompt('Name of this computer', store.find(id)?.name ?? '');
    if (name) store.rename(id, name);
    render();
  },
  remove: (id) => void remove(id),
  add: (link) => addFromLink(link),
  open: (id, link) => follow(link, false, id),
  answer: (id, requestId, decision) => answer(id, requestId, decision),
});

function render(): void {
  const entries = store.all.flatMap((machine) => {
    const view = views.get(machine.id);
    return view ? [{ ...view, machine }] : [];
  });
  switcher.render(entries, store.current?.id);
}

/** The machine's view, made (and connected) once; its chat keeps running while another machine is shown. */
function viewOf(machine: Machine): MachineView {
  const existing = views.get(machine.id);
  if (existing) return existing;
  const storage = store.storageOf(machine.id);
  const connection = connectMachine(storedPairing(machine, store));
  const pending = followPending(connection);
  const status = new MachineStatus(connection, storage, pending);
  status.onChange(render);
  const worker = registerPushWorker(machine.slot);
  const notifications = new NotificationSettings(connection, worker, storage);
  reportVisibility(connection, deviceId());
  const element = h('div', { class: 'machine-view', 'data-machine-id': machine.id, hidden: true });
  root.insertBefore(element, switcher.panel);
  const slot = h('span', { class: 'machine-slot' });
  const removeButton = h('button', { type: 'button', class: 'button danger forget-pairing' }, 'Remove this computer');
  removeButton.addEventListener('click', () => void remove(machine.id));
  // Owner only (the service refuses a password user, and the screen says so).
  const activity = new ActivityView(connection, { open: (conversationId) => app.openConversation(conversationId) });
  const app = new ChatApp({
    connection,
    pending,
    root: element,
    outboxStorage: storage,
    keptFiles: files?.of(machine.id),
    headerExtra: slot,
    pairAgain: () => switcher.openAdd(),
    drawerFooter: h(
      'div',
      { class: 'drawer-footer' },
      activity.button,
      new DevicesSection(connection, deviceId).element,
      notifications.button,
      // This computer's address, with its removal: what the last two lines are about.
      h('div', { class: 'paired-with' }, machine.pairing.relay ? `Via relay: ${hostOf(machine.pairing.url)} (end-to-end encrypted)` : `Service: ${hostOf(machine.pairing.url)}`),
      removeButton,
    ),
    memory: {
      load: () => storage.getItem(CONVERSATION_KEY) ?? undefined,
      save: (id) => {
        if (id) storage.setItem(CONVERSATION_KEY, id);
        else storage.removeItem(CONVERSATION_KEY);
        if (store.current?.id === machine.id) status.look(id);
      },
    },
  });
  element.append(activity.panel);
  const view: MachineView = { machine, status, connection, element, slot, links: new DeepLinks(connection, app, element), notifications, worker };
  views.set(machine.id, view);
  return view;
}

/** Puts the machine on screen; the others stay connected behind it. */
function show(id: string): void {
  const machine = store.find(id);
  if (!machine) return;
  store.setCurrent(id);
  root.className = '';
  root.querySelector('.pairing-form')?.remove();
  const shown = viewOf(machine);
  for (const view of views.values()) {
    view.element.hidden = view !== shown;
    view.status.look(view === shown ? (store.storageOf(view.machine.id).getItem(CONVERSATION_KEY) ?? undefined) : undefined);
  }
  shown.slot.append(switcher.button);
  render();
}

/** A pairing link opened (at start, or into the open page): its machine is added (asked first beside others), or renewed, and shown. */
function takePairingLink(): boolean {
  const pairing = parseFragment(location.hash, location);
  if (!pairing) return false;
  const { href: link, hash } = location;
  history.replaceState(history.state, '', location.pathname + location.search);
  const known = store.find(machineIdOf(pairing));
  if (known?.pairing.token) {
    // A machine this phone holds a credential for: the link replaces it only once the machine accepted
    // the link (the add sheet's trial), so a spent, bogus or planted link never unpairs the phone.
    show(known.id);
    switcher.tryLink(link);
    return true;
  }
  const current = store.current;
  if (!known && current) {
    // A machine this phone does not know, from a link opened from outside the page (a planted QR code,
    // a link in a message or on a web page): nothing connects to it unless the person agrees, told its
    // name and address; then it is tried as a pasted link is (the add sheet's trial), so a refused link
    // adds nothing. (A phone that holds no machine yet takes its first link at once: that is pairing.)
    show(current.id);
    const host = hostOf(pairing.url);
    if (confirm(`Add the computer “${nameOfFragment(hash) ?? host}” (${host}) to this phone? Only if you opened its pairing link yourself.`)) switcher.tryLink(link);
    return true;
  }
  const machine = store.add(pairing, nameOfFragment(hash));
  // Paired again: the old connection used the old credential; start over with the new pairing.
  if (views.has(machine.id)) drop(machine.id);
  show(machine.id);
  return true;
}

/**
 * "Add a computer": a pairing link pasted or read from a QR code on this page (another machine's page
 * knows only that machine). Its secret is spent on a trial connection first: only a machine that
 * accepted it is added, so a bad, spent or expired link (or one this page cannot reach) changes nothing.
 */
async function addFromLink(text: string): Promise<string | undefined> {
  const reading = readPairingLink(text);
  if ('problem' in reading) return reading.problem;
  const blocked = unreachableFrom(reading.pairing, location);
  if (blocked) return blocked;
  const trial = await tryPairing(reading.pairing);
  if (!trial.ok) return trial.problem;
  const machine = store.add(trial.pairing, reading.name);
  // Paired again: the old connection used the old credential.
  if (views.has(machine.id)) drop(machine.id);
  switcher.toggle(false);
  show(machine.id);
  return undefined;
}

/** Removes a machine from this phone, ending its device credential there when it can be reached. */
async function remove(id: string): Promise<void> {
  const view = views.get(id);
  const machine = store.find(id);
  if (!view || !machine || !confirm(`Remove “${machine.name}” from this phone? Its pairing ends; pair again with a new QR code.`)) return;
  if (view.connection.state.state === 'open') {
    // Our own credential: the service closes this socket (4401) right after, so the answer may never come.
    await view.connection.request({ type: 'revoke_device', device_id: machine.pairing.device ?? deviceId() }).catch(() => undefined);
  }
  // Its own push subscription and worker go with it; the other machines' are separate.
  view.notifications.forget();
  void view.worker.then((registration) => registration?.unregister()).catch(() => undefined);
  drop(id);
  store.remove(id);
  // Its files kept for a reload go with its other keys.
  files?.of(id).keepOnly(() => false);
  const next = store.current;
  if (next) show(next.id);
  else showPairingForm();
}

function drop(id: string): void {
  const view = views.get(id);
  if (!view) return;
  view.connection.close();
  view.element.remove();
  views.delete(id);
}

/**
 * Follows a notification's link on the machine it belongs to: the one its worker named (`machine=`),
 * else the one whose conversations or prompts hold it (ids are unique), else after a while the one on
 * screen.
 */
function follow(link: DeepLink, trusted: boolean, machineId?: string): void {
  const only = views.size === 1 ? [...views.values()][0] : undefined;
  const named = link.machine ? views.get(store.bySlot(link.machine)?.id ?? '') : undefined;
  const target = machineId ? views.get(machineId) : (named ?? only ?? [...views.values()].find((view) => view.status.knows(link)));
  if (target) {
    show(target.machine.id);
    target.links.follow(link, trusted);
    return;
  }
  const unsubscribe = [...views.values()].map((view) => view.status.onChange(() => retry()));
  const timer = setTimeout(() => retry(true), LINK_RESOLVE_MS);
  const retry = (giveUp = false) => {
    const found = [...views.values()].find((view) => view.status.knows(link)) ?? (giveUp ? views.get(store.current?.id ?? '') : undefined);
    if (!found) return;
    clearTimeout(timer);
    for (const stop of unsubscribe) stop();
    follow(link, trusted, found.machine.id);
  };
}

async function answer(machineId: string, requestId: string, decision: 'allow' | 'deny'): Promise<string> {
  const view = views.get(machineId);
  if (!view) return 'That computer is no longer paired.';
  try {
    const reply = await view.connection.request({ type: 'permission_response', request_id: requestId, decision });
    return `${view.machine.name}: ${answerText(reply, view.connection.actingAs).text}`;
  } catch {
    return `${view.machine.name} is not connected.`;
  }
}

/** Manual pairing, for when the QR code's link cannot be opened directly. */
function showPairingForm(): void {
  root.className = 'pairing';
  // The page is served by the service (or a relay) it pairs with: its own socket is the likely answer.
  const url = h('input', { id: 'pair-url', type: 'url', required: true, placeholder: 'ws://…/ws', value: ownUrl(), autocomplete: 'off', spellcheck: 'false' });
  const token = h('input', { id: 'pair-token', type: 'password', required: true, autocomplete: 'off' });
  // The phone's camera app opens a QR code's link by itself; a code it cannot open, a photo of it or a
  // link copied elsewhere goes through the Computers sheet's "Add a computer", the page's one way in.
  const scan = h('button', { type: 'button', class: 'button primary pairing-scan' }, 'Scan or paste a pairing link');
  scan.addEventListener('click', () => switcher.openAdd());
  const form = h(
    'form',
    { class: 'pairing-form' },
    h('h1', {}, 'Remote Assistant'),
    h(
      'p',
      {},
      'Open a pairing link, or scan its QR code: on the computer, ',
      h('code', {}, 'remote-assistant pair'),
      ' prints one (and ',
      h('code', {}, 'remote-assistant serve'),
      ' does while no phone is paired); in the editor, command “Remote Assistant: Show Connection Info”.',
    ),
    scan,
    h('p', { class: 'pairing-or' }, 'Or enter the service address and access token:'),
    h('label', { for: 'pair-url' }, 'Service WebSocket URL'),
    url,
    h('label', { for: 'pair-token' }, 'Token'),
    token,
    h('button', { type: 'submit', class: 'button secondary' }, 'Connect'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const pairing = { url: url.value.trim(), token: token.value.trim() };
    token.value = '';
    if (!/^wss?:\/\//i.test(pairing.url) || !pairing.token) return;
    form.remove();
    show(store.add(pairing).id);
  });
  root.append(form);
}

/** This page's own service socket, when it was served over http(s) (not opened from a file). */
function ownUrl(): string {
  return /^https?:$/.test(location.protocol) ? defaultUrl(location) : '';
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'unknown';
  }
}

void openKeptFiles().then((opened) => {
  files = opened;
  start();
});

function start(): void {
  root.replaceChildren(switcher.panel);
  for (const machine of store.all) viewOf(machine);
  if (!takePairingLink()) {
    const current = store.current;
    if (current) show(current.id);
    else showPairingForm();
  }
  // Another machine's QR code opened while the page is open (only the fragment changes: no reload).
  window.addEventListener('hashchange', () => takePairingLink());
  onWorkerLink((link) => follow(link, true));
  const link = readDeepLink(location.href);
  if (link) follow(link, false);
}
