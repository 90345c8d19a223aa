/**
 * The "Notifications" dialog of the phone page's menu: turn Web Push on for this device (the browser's
 * permission, PushManager.subscribe with the service's VAPID key from push_info, then push_subscribe),
 * choose what is pushed and content-blind mode (push_settings), name the device, send a test, turn it
 * off (push_unsubscribe and the browser's unsubscribe). When notifications cannot work here it says why.
 */
import type { ServiceConnection } from '../connection';
import { h, uniqueId } from '../chat/dom';
import { currentEnvironment, pushAvailability, UNAVAILABLE } from './availability';
import { deviceId, deviceName, saveDeviceName } from './device';
import { pushRequest, type PushDevice, type PushEventChoice, type PushEventKind, type PushSubscriptionWire } from './push-commands';

const KIND_LABELS: Record<PushEventKind, string> = {
  prompt: 'A tool waits for my approval',
  finished: 'A run finished',
  failed: 'A run failed',
  webhook: 'A webhook run finished',
  review: 'Changes are ready for review',
};
const KINDS = Object.keys(KIND_LABELS) as PushEventKind[];
/** The endpoint this device last registered with the service (to notice a renewed subscription). */
const ENDPOINT_KEY = 'remote-assistant.push-endpoint';

export class NotificationSettings {
  /** The menu entry that opens the dialog. */
  readonly button: HTMLButtonElement;
  private readonly dialog: HTMLElement;
  private readonly status = h('p', { class: 'push-status', role: 'status' });
  private readonly name = h('input', { id: uniqueId('push-device-name'), class: 'push-device-name', type: 'text', maxlength: 100, autocomplete: 'off' });
  private readonly enable = h('button', { type: 'button', class: 'button primary push-enable' }, 'Turn on notifications');
  private readonly disable = h('button', { type: 'button', class: 'button secondary push-disable' }, 'Turn off on this device');
  private readonly test = h('button', { type: 'button', class: 'button secondary push-test' }, 'Send test notification');
  private readonly testResult = h('p', { class: 'push-test-result', role: 'status' });
  private readonly kinds = new Map<PushEventKind, HTMLInputElement>();
  private readonly blind = h('input', { type: 'checkbox', class: 'push-blind' });
  private readonly choices: HTMLElement;
  private device: PushDevice | undefined;
  /**
   * push_settings of the choices still waiting for their answer. Each carries every box as it was when sent,
   * and the answers come in order: until the last is in, an answer is not drawn over the boxes, so a box
   * tapped while the one before was being saved is not turned back (then on again) by that first answer.
   */
  private saving = 0;
  private busy = false;
  /** The last action's failure, shown instead of the state until the next action. */
  private failure: string | undefined;

  constructor(
    private readonly connection: ServiceConnection,
    private readonly worker: Promise<ServiceWorkerRegistration | undefined>,
    /** Where the endpoint registered with this service is remembered (the phone: that machine's own storage). */
    private readonly storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> = localStorage,
  ) {
    this.button = h(
      'button',
      { type: 'button', class: 'open-notifications drawer-row', 'aria-haspopup': 'dialog' },
      h('span', {}, 'Notifications'),
      h('span', { class: 'drawer-row-hint', 'aria-hidden': 'true' }, '›'),
    );
    this.name.value = deviceName();
    this.choices = h(
      'fieldset',
      { class: 'push-choices' },
      h('legend', {}, 'Notify me when'),
      ...KINDS.map((kind) => {
        const box = h('input', { type: 'checkbox', 'data-kind': kind, checked: true });
        this.kinds.set(kind, box);
        box.addEventListener('change', () => void this.saveChoices());
        return h('label', { class: 'push-choice' }, box, KIND_LABELS[kind]);
      }),
      h('label', { class: 'push-choice' }, this.blind, 'Content-blind: say only “Remote Assistant needs you”; details show when I open the page'),
    );
    this.blind.addEventListener('change', () => void this.saveChoices());
    const close = h('button', { type: 'button', class: 'icon-button push-close', 'aria-label': 'Close' }, '✕');
    const title = uniqueId('push-title');
    this.dialog = h(
      'div',
      { class: 'push-dialog', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': title, hidden: true },
      h(
        'div',
        { class: 'push-panel' },
        h('div', { class: 'push-head' }, h('h2', { id: title }, 'Notifications'), close),
        this.status,
        h('label', { for: this.name.id }, 'This device’s name'),
        this.name,
        h('div', { class: 'push-actions' }, this.enable, this.disable),
        this.choices,
        this.test,
        this.testResult,
      ),
    );
    document.body.appendChild(this.dialog);
    this.button.addEventListener('click', () => this.open());
    close.addEventListener('click', () => this.close());
    this.dialog.addEventListener('click', (event) => {
      if (event.target === this.dialog) this.close();
    });
    this.dialog.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.close();
    });
    this.enable.addEventListener('click', () => void this.guard(() => this.turnOn()));
    this.disable.addEventListener('click', () => void this.guard(() => this.turnOff()));
    this.test.addEventListener('click', () => void this.guard(() => this.sendTest()));
    this.name.addEventListener('change', () => void this.rename());
    connection.onState((state) => {
      if (state.state === 'open') void this.resync().catch((error: unknown) => console.warn('push subscription not renewed', error));
    });
    this.render();
  }

  open(): void {
    this.dialog.hidden = false;
    this.testResult.textContent = '';
    this.failure = undefined;
    this.render();
    void this.refresh();
    this.dialog.querySelector<HTMLElement>('.push-close')?.focus();
  }

  close(): void {
    this.dialog.hidden = true;
    this.button.focus();
  }

  /** This device as the service knows it (undefined: not subscribed). */
  private async refresh(): Promise<void> {
    const answer = await pushRequest(this.connection, 'list_push_devices', {}).catch(() => undefined);
    if (answer?.status !== 'ok') {
      if (answer) this.failure = `Could not read the notification settings: ${answer.error}`;
      this.render();
      return;
    }
    this.device = answer.data.devices.find((d) => d.device_id === deviceId());
    this.render();
  }

  private render(): void {
    const availability = pushAvailability(currentEnvironment());
    const on = this.device !== undefined;
    this.enable.hidden = on;
    this.disable.hidden = !on;
    this.enable.disabled = this.busy || !availability.available;
    this.choices.hidden = !on;
    this.test.hidden = !on;
    if (this.device && this.saving === 0) {
      for (const [kind, box] of this.kinds) box.checked = this.device.events[kind];
      this.blind.checked = this.device.content_blind;
    }
    if (this.failure) this.status.textContent = this.failure;
    else if (!availability.available) this.status.textContent = availability.reason;
    else if (on) this.status.textContent = `On for this device${this.device?.endpoint_origin ? ` (through ${this.device.endpoint_origin})` : ''}.`;
    else this.status.textContent = 'Off on this device. Turn them on to hear about prompts and finished runs when this page is not on screen.';
  }

  private async guard(action: () => Promise<void>): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.failure = undefined;
    this.render();
    try {
      await action();
    } catch (error) {
      this.failure = error instanceof Error ? error.message : String(error);
    }
    this.busy = false;
    this.render();
  }

  private chosen(): { events: PushEventChoice; content_blind: boolean } {
    const events = Object.fromEntries(KINDS.map((kind) => [kind, this.kinds.get(kind)?.checked ?? true])) as PushEventChoice;
    return { events, content_blind: this.blind.checked };
  }

  private async turnOn(): Promise<void> {
    if (Notification.permission !== 'granted' && (await Notification.requestPermission()) !== 'granted') throw new Error(UNAVAILABLE.denied);
    const subscription = await this.browserSubscription();
    await this.register(subscription, { device_name: deviceName(), ...this.chosen() });
  }

  /**
   * After each (re)connection. Browsers renew or drop push subscriptions on their own, and the worker
   * cannot tell the service (it holds no credential): when this device is subscribed on the service but
   * the browser's subscription is not the one registered, register the current one, with the device's
   * name and choices as the service has them.
   */
  private async resync(): Promise<void> {
    if (!pushAvailability(currentEnvironment()).available || Notification.permission !== 'granted') return;
    const listed = await pushRequest(this.connection, 'list_push_devices', {}).catch(() => undefined);
    if (listed?.status !== 'ok') return;
    this.device = listed.data.devices.find((d) => d.device_id === deviceId());
    this.render();
    const registration = await this.worker;
    if (!this.device || !registration) return;
    const current = await registration.pushManager.getSubscription();
    if (current && current.endpoint === this.storage.getItem(ENDPOINT_KEY)) return;
    const { device_name, events, content_blind } = this.device;
    await this.register(await this.browserSubscription(), { device_name, events, content_blind });
    this.render();
  }

  /** The browser's push subscription for the service's VAPID key (made when there is none). */
  private async browserSubscription(): Promise<PushSubscriptionWire> {
    const registration = await this.worker;
    if (!registration) throw new Error('Could not turn on notifications: the service worker is not installed; reload the page.');
    const info = await pushRequest(this.connection, 'push_info', {});
    if (info.status !== 'ok') throw new Error(`Could not turn on notifications: ${info.error}`);
    const key = base64UrlBytes(info.data.vapid_public_key);
    let subscription = await registration.pushManager.getSubscription();
    // A subscription made for another key (another service, or a new key pair) cannot carry this one's pushes.
    if (subscription && !sameKey(subscription.options.applicationServerKey, key)) {
      await subscription.unsubscribe();
      subscription = null;
    }
    try {
      subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    } catch (error) {
      throw new Error(`The browser could not subscribe to its push service: ${error instanceof Error ? error.message : String(error)}`);
    }
    const json = subscription.toJSON();
    if (!json.endpoint || !json.keys?.p256dh || !json.keys.auth) throw new Error('The browser gave an incomplete push subscription.');
    return { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } };
  }

  private async register(subscription: PushSubscriptionWire, settings: { device_name: string; events: PushEventChoice; content_blind: boolean }): Promise<void> {
    const answer = await pushRequest(this.connection, 'push_subscribe', { device_id: deviceId(), subscription, ...settings });
    if (answer.status !== 'ok') throw new Error(`The service refused the subscription: ${answer.error}`);
    this.device = answer.data.device;
    this.storage.setItem(ENDPOINT_KEY, subscription.endpoint);
  }

  private async turnOff(): Promise<void> {
    const answer = await pushRequest(this.connection, 'push_unsubscribe', { device_id: deviceId() });
    if (answer.status !== 'ok') throw new Error(`Could not turn notifications off: ${answer.error}`);
    this.device = undefined;
    this.storage.removeItem(ENDPOINT_KEY);
    const registration = await this.worker;
    await (await registration?.pushManager.getSubscription())?.unsubscribe();
  }

  /** The pairing is forgotten: this device stops receiving pushes (best effort, the connection closes next). */
  forget(): void {
    pushRequest(this.connection, 'push_unsubscribe', { device_id: deviceId() }).catch(() => undefined);
    void this.worker.then(async (registration) => (await registration?.pushManager.getSubscription())?.unsubscribe()).catch(() => undefined);
    this.device = undefined;
    this.storage.removeItem(ENDPOINT_KEY);
    this.dialog.remove();
  }

  private async sendTest(): Promise<void> {
    this.testResult.textContent = 'Sending…';
    const answer = await pushRequest(this.connection, 'push_test', { device_id: deviceId() });
    if (answer.status !== 'ok') {
      this.testResult.textContent = `Not sent: ${answer.error}`;
      return;
    }
    const result = answer.data.results.find((r) => r.device_id === deviceId());
    if (!result) this.testResult.textContent = 'Not sent: this device is not subscribed.';
    else if (result.ok) this.testResult.textContent = 'Sent: it should show in a moment.';
    else this.testResult.textContent = `Not delivered${result.status === null ? '' : ` (${result.status})`}: ${result.error ?? 'the push service refused it'}`;
  }

  private async saveChoices(): Promise<void> {
    if (!this.device) return;
    this.saving += 1;
    const answer = await pushRequest(this.connection, 'push_settings', { device_id: deviceId(), ...this.chosen() })
      .catch(() => undefined)
      .finally(() => (this.saving -= 1));
    if (answer?.status === 'ok') {
      this.device = answer.data.device;
      // A later save carries every box: once one is saved, an earlier one's failure is no longer the state.
      this.failure = undefined;
    } else this.failure = `Not saved: ${answer?.error ?? 'not connected'}`;
    this.render();
  }

  private async rename(): Promise<void> {
    this.name.value = saveDeviceName(this.name.value);
    if (!this.device) return;
    const answer = await pushRequest(this.connection, 'push_settings', { device_id: deviceId(), device_name: this.name.value }).catch(() => undefined);
    if (answer?.status === 'ok') this.device = answer.data.device;
    else this.failure = `Name not saved: ${answer?.error ?? 'not connected'}`;
    this.render();
  }
}

function base64UrlBytes(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function sameKey(current: ArrayBuffer | null, wanted: Uint8Array): boolean {
  if (!current) return false;
  const bytes = new Uint8Array(current);
  return bytes.length === wanted.length && bytes.every((b, i) => b === wanted[i]);
}
