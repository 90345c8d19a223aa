/**
 * "Add a computer", in the machine switcher: any machine's page can pair with another machine, from
 * its pairing link pasted here or from its QR code (a photo taken with the phone's camera, read in the
 * page; the live camera too where the page may use it: a secure context). The link is tried before
 * anything is kept (try-pairing.ts); what went wrong is said here, in words.
 */
import { h } from '../chat/dom';
import { readQr } from './qr-reader';

export interface AddMachineActions {
  /** Pairs with the machine of the link; resolves to what went wrong, or undefined once it is added. */
  add(link: string): Promise<string | undefined>;
}

/** How often a frame of the live camera is looked at for a QR code. */
const SCAN_EVERY_MS = 300;

export class AddMachine {
  readonly element: HTMLElement;
  private readonly toggleButton: HTMLButtonElement;
  private readonly region: HTMLElement;
  private readonly link: HTMLInputElement;
  private readonly status = h('p', { class: 'add-machine-status', role: 'status', 'aria-live': 'polite' });
  private readonly video = h('video', { class: 'add-machine-video', muted: true, playsinline: true, hidden: true });
  private stream: MediaStream | undefined;
  private busy = false;

  constructor(private readonly actions: AddMachineActions) {
    this.toggleButton = h('button', { type: 'button', class: 'button secondary add-machine-toggle', 'aria-expanded': 'false', 'aria-controls': 'ra-add-machine' }, 'Add a computer');
    this.toggleButton.addEventListener('click', () => this.toggle());
    this.link = h('input', {
      id: 'ra-add-link',
      class: 'add-machine-link',
      type: 'url',
      inputmode: 'url',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'http://…/#url=…&pair=…',
    });
    const photo = h('input', { type: 'file', accept: 'image/*', capture: 'environment', class: 'visually-hidden add-machine-photo' });
    photo.addEventListener('change', () => {
      const file = photo.files?.[0];
      photo.value = '';
      if (file) void this.fromPicture(file);
    });
    const form = h(
      'form',
      // Our own message for text that is no link, rather than the browser's bubble (no pairing link in it).
      { class: 'add-machine-form', novalidate: true },
      h('label', { for: 'ra-add-link' }, 'Pairing link'),
      h('div', { class: 'add-machine-row' }, this.link, h('button', { type: 'submit', class: 'button primary add-machine-submit' }, 'Add')),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.tryLink(this.link.value);
    });
    const scanners = h('div', { class: 'add-machine-row' }, h('label', { class: 'button secondary add-machine-photo-label' }, photo, 'Photo of its QR code'));
    // The camera stream exists only in a secure context (https, localhost); a LAN page over http has the photo.
    if (typeof (navigator.mediaDevices as MediaDevices | undefined)?.getUserMedia === 'function') {
      const camera = h('button', { type: 'button', class: 'button secondary add-machine-camera' }, 'Scan with the camera');
      camera.addEventListener('click', () => void (this.stream ? this.stopCamera() : this.startCamera()));
      scanners.append(camera);
    }
    this.region = h(
      'div',
      { id: 'ra-add-machine', class: 'add-machine', hidden: true },
      h(
        'p',
        { class: 'add-machine-hint' },
        'On the computer to add, ',
        h('code', {}, 'remote-assistant pair'),
        ' shows a pairing link and its QR code (in the editor: “Remote Assistant: Show Connection Info”). Paste the link, or take a photo of the code.',
      ),
      form,
      // Right under Add, where the eye is after tapping it (below the photo buttons it was off a 320 px screen).
      this.status,
      scanners,
      this.video,
    );
    this.element = h('section', { class: 'add-machine-section', 'aria-label': 'Add a computer' }, this.toggleButton, this.region);
  }

  toggle(open = this.region.hidden): void {
    this.region.hidden = !open;
    this.toggleButton.setAttribute('aria-expanded', String(open));
    if (open) this.link.focus();
    else this.reset();
  }

  /** A pairing link opened into the page, tried here as if pasted (what went wrong is said here). */
  tryOpened(link: string): void {
    this.toggle(true);
    this.link.value = link;
    void this.tryLink(link);
  }

  /** The switcher closed: the camera stops and what was typed goes. */
  reset(): void {
    this.stopCamera();
    this.link.value = '';
    this.say('');
  }

  private async fromPicture(file: Blob): Promise<void> {
    this.say('Reading the QR code…', 'busy');
    const text = await readQr(file).catch(() => undefined);
    if (!text) return this.say('No QR code could be read in that picture. Take it again, closer, with the whole code in the frame.', 'error');
    this.link.value = text;
    await this.tryLink(text);
  }

  private async tryLink(text: string): Promise<void> {
    if (this.busy) return;
    if (!text.trim()) return this.say('Paste the pairing link first.', 'error');
    this.busy = true;
    this.say('Pairing…', 'busy');
    try {
      const problem = await this.actions.add(text);
      if (problem) this.say(problem, 'error');
      else this.toggle(false);
    } finally {
      this.busy = false;
    }
  }

  private async startCamera(): Promise<void> {
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
    } catch {
      return this.say('The camera could not be opened here; take a photo of the QR code instead.', 'error');
    }
    this.video.srcObject = this.stream;
    this.video.hidden = false;
    await this.video.play().catch(() => undefined);
    this.say('Point the camera at the QR code.', 'busy');
    const stream = this.stream;
    const look = async () => {
      if (this.stream !== stream) return;
      const text = this.video.readyState >= 2 ? await readQr(this.video).catch(() => undefined) : undefined;
      if (this.stream !== stream) return;
      if (!text) return void setTimeout(() => void look(), SCAN_EVERY_MS);
      this.stopCamera();
      this.link.value = text;
      await this.tryLink(text);
    };
    void look();
  }

  private stopCamera(): void {
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    this.stream = undefined;
    this.video.srcObject = null;
    this.video.hidden = true;
  }

  private say(text: string, kind?: 'busy' | 'error'): void {
    this.status.textContent = text;
    if (kind) this.status.dataset.kind = kind;
    else delete this.status.dataset.kind;
    if (text) this.status.scrollIntoView({ block: 'nearest' });
  }
}
