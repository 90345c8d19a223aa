/**
 * "Devices" in the phone page's drawer (docs/protocol.md, "Devices"): the phones paired with this
 * machine, each with its own credential, and revoking one (a lost phone: its sockets close at once).
 * Loaded each time the section is opened; only the owner may list (a session user sees the refusal).
 */
import type { PairedDevice } from '../protocol';
import { h, relativeTime } from './chat/dom';
import type { ServiceConnection } from './connection';

/** "5 min ago", "yesterday": how long ago reads at a glance (the exact time is the line's title). */
const when = (iso: string | null) => (iso ? relativeTime(iso) : 'never');

export class DevicesSection {
  readonly element: HTMLDetailsElement;
  private readonly body: HTMLElement;
  private readonly error: HTMLElement;

  constructor(
    private readonly connection: ServiceConnection,
    /** This page's own device id: marked "this phone" (revoking it unpairs this page). */
    private readonly ownDeviceId: () => string,
  ) {
    this.body = h('ul', { class: 'devices-list' });
    this.error = h('div', { class: 'devices-error', role: 'alert' });
    this.element = h('details', { class: 'devices' }, h('summary', { class: 'devices-open drawer-row' }, 'Devices'), this.body, this.error);
    this.element.addEventListener('toggle', () => {
      if (this.element.open) void this.load();
    });
  }

  private async load(): Promise<void> {
    this.error.textContent = '';
    try {
      const answer = await this.connection.request({ type: 'list_devices' });
      if (answer.status !== 'ok') throw new Error(answer.error);
      this.render(answer.data.devices);
    } catch (error) {
      this.body.replaceChildren();
      this.error.textContent = (error as Error).message;
    }
  }

  private render(devices: PairedDevice[]): void {
    if (devices.length === 0) {
      this.body.replaceChildren(h('li', { class: 'devices-empty' }, 'No paired device.'));
      return;
    }
    this.body.replaceChildren(
      ...devices.map((device) => {
        const own = device.device_id === this.ownDeviceId();
        const revoke = h('button', { type: 'button', class: 'button secondary device-revoke' }, 'Revoke');
        revoke.addEventListener('click', () => void this.revoke(device, revoke));
        return h(
          'li',
          { class: 'device', 'data-device-id': device.device_id },
          h('div', { class: 'device-name' }, device.device_name, own ? ' (this phone)' : ''),
          h(
            'div',
            { class: 'device-detail', title: device.last_seen ? `last seen ${new Date(device.last_seen).toLocaleString()}` : undefined },
            `${device.via === 'relay' ? 'relay' : 'LAN'} · notifications ${device.push ? 'on' : 'off'} · last seen ${when(device.last_seen)}`,
          ),
          revoke,
        );
      }),
    );
  }

  private async revoke(device: PairedDevice, button: HTMLButtonElement): Promise<void> {
    if (!window.confirm(`Revoke “${device.device_name}”? It is disconnected at once and must be paired again.`)) return;
    button.disabled = true;
    const answer = await this.connection.request({ type: 'revoke_device', device_id: device.device_id }).catch((error: Error) => ({ status: 'error' as const, error: error.message }));
    if (answer.status !== 'ok') {
      button.disabled = false;
      this.error.textContent = answer.error;
      return;
    }
    await this.load();
  }
}
