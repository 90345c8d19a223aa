/**
 * The phone page: the chat app over a WebSocket to the service. Pairing (URL + token) comes from the
 * page URL's fragment once, then from localStorage. Without a pairing it shows how to pair.
 */
import { ChatApp } from './chat/app';
import { h } from './chat/dom';
import { loadClientKeyPair } from './client-key';
import { forgetPairing, loadPairing, markPaired, saveDeviceToken, savePairing, type Pairing } from './pairing';
import { RelayWire } from './relay-wire';
import { DevicesSection } from './devices-section';
import { DeepLinks, readDeepLink } from './push/deep-link';
import { deviceId, deviceName } from './push/device';
import { NotificationSettings } from './push/notification-settings';
import { reportVisibility } from './push/visibility';
import { registerPushWorker } from './push/worker-registration';
import { WebSocketConnection } from './websocket-connection';

const CONVERSATION_KEY = 'remote-assistant.conversation';
const root = document.getElementById('app') ?? document.body.appendChild(document.createElement('div'));

const pushWorker = registerPushWorker();

function start(paired: Pairing): void {
  let pairing = paired;
  const relay = pairing.relay;
  let pairingSecret = relay?.pair;
  const connection = new WebSocketConnection({
    url: pairing.url,
    token: pairing.token,
    // A QR code's one-time secret: spent in the first `auth` for this device's own credential.
    pairing: () => (pairing.pair ? { pairing_secret: pairing.pair, device_id: deviceId(), device_name: deviceName() } : undefined),
    onDeviceToken: (token) => {
      pairing = { url: pairing.url, token, ...(relay ? { relay } : {}) };
      saveDeviceToken(token);
    },
    createWire: relay
      ? () =>
          new RelayWire({
            keyPair: loadClientKeyPair(),
            machineKey: relay.machineKey,
            pairingSecret: () => pairingSecret,
            onPaired: () => {
              if (pairingSecret === undefined) return;
              pairingSecret = undefined;
              markPaired();
            },
          })
      : undefined,
  });
  const notifications = new NotificationSettings(connection, pushWorker);
  const forget = h('button', { type: 'button', class: 'button secondary forget-pairing' }, 'Forget this pairing');
  forget.addEventListener('click', () => {
    notifications.forget();
    connection.close();
    forgetPairing();
    localStorage.removeItem(CONVERSATION_KEY);
    showPairingForm();
  });
  reportVisibility(connection, deviceId());
  const app = new ChatApp({
    connection,
    root,
    outboxStorage: localStorage,
    drawerFooter: h(
      'div',
      { class: 'drawer-footer' },
      h('div', { class: 'paired-with' }, relay ? `Via relay: ${hostOf(pairing.url)} (end-to-end encrypted)` : `Service: ${hostOf(pairing.url)}`),
      new DevicesSection(connection, deviceId).element,
      notifications.button,
      forget,
    ),
    memory: {
      load: () => localStorage.getItem(CONVERSATION_KEY) ?? undefined,
      save: (id) => (id ? localStorage.setItem(CONVERSATION_KEY, id) : localStorage.removeItem(CONVERSATION_KEY)),
    },
  });
  const links = new DeepLinks(connection, app, root);
  const link = readDeepLink(location.href);
  if (link) links.follow(link);
}

/** Manual pairing, for when the QR code's link cannot be opened directly. */
function showPairingForm(): void {
  root.className = 'pairing';
  const url = h('input', { id: 'pair-url', type: 'url', required: true, placeholder: 'wss://…/ws', autocomplete: 'off', spellcheck: 'false' });
  const token = h('input', { id: 'pair-token', type: 'password', required: true, autocomplete: 'off' });
  const form = h(
    'form',
    { class: 'pairing-form' },
    h('h1', {}, 'Remote Assistant'),
    h('p', {}, 'Scan the pairing QR code shown by the editor (command “Remote Assistant: Pair a Phone”), or enter the service address and token.'),
    h('label', { for: 'pair-url' }, 'Service WebSocket URL'),
    url,
    h('label', { for: 'pair-token' }, 'Token'),
    token,
    h('button', { type: 'submit', class: 'button primary' }, 'Connect'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const pairing = { url: url.value.trim(), token: token.value.trim() };
    token.value = '';
    if (!/^wss?:\/\//i.test(pairing.url) || !pairing.token) return;
    savePairing(pairing);
    root.className = '';
    start(pairing);
  });
  root.replaceChildren(form);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'unknown';
  }
}

const pairing = loadPairing();
if (pairing) start(pairing);
else showPairingForm();
