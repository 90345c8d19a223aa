/**
 * Attaching pictures and files to a message (docs/protocol.md, "Attachments"), page side: the attach
 * (and, on a phone, camera) buttons, paste and drag-and-drop, a tray of chips above the message box,
 * uploads in chunks as soon as a file is chosen, and the attachments shown in sent messages (images as
 * thumbnails, read back with get_attachment, from history too).
 */
import type { AttachmentInfo, EnvelopeOf } from '../../protocol';
import type { ServiceConnection } from '../connection';
import { isPhoto, prepareImage } from './attachment-images';
import { h, strokeIcon } from './dom';
import { sha256Hex } from './sha256';

interface Pending {
  chip: HTMLElement;
  name: string;
  upload: Promise<AttachmentInfo>;
}

/** The pictures and files chosen for the next message, uploading while the user types. */
export class AttachmentTray {
  readonly element: HTMLElement;
  /** The controls for the message box: attach (files, photo library) and camera. */
  readonly controls: HTMLElement[];
  private pending: Pending[] = [];

  constructor(
    private readonly connection: ServiceConnection,
    private readonly thumbnails: AttachmentThumbnails,
  ) {
    this.element = h('div', { class: 'attachment-tray', hidden: true, 'aria-label': 'Attachments' });
    const files = h('input', { type: 'file', multiple: true, class: 'attach-input', hidden: true, 'aria-hidden': 'true' });
    // A phone offers its camera for this one; `capture` asks for the rear camera.
    const camera = h('input', { type: 'file', accept: 'image/*', capture: 'environment', class: 'camera-input', hidden: true, 'aria-hidden': 'true' });
    for (const input of [files, camera]) {
      input.addEventListener('change', () => {
        this.add(Array.from(input.files ?? []));
        input.value = '';
      });
    }
    const attach = h('button', { type: 'button', class: 'button attach', title: 'Attach a picture or a file', 'aria-label': 'Attach a picture or a file' }, icon(PAPERCLIP));
    attach.addEventListener('click', () => files.click());
    const shoot = h('button', { type: 'button', class: 'button camera', title: 'Take a photo', 'aria-label': 'Take a photo' }, icon(CAMERA));
    shoot.addEventListener('click', () => camera.click());
    // The camera button only where there is a camera to point: a touch screen.
    shoot.hidden = !globalThis.matchMedia?.('(pointer: coarse)').matches;
    this.controls = [attach, shoot, files, camera];
  }

  get count(): number {
    return this.pending.length;
  }

  /** Pasted and dropped files (a screenshot pasted in the editor, files dragged in) join the tray. */
  watch(target: HTMLElement): void {
    target.addEventListener('paste', (event) => {
      const pasted = Array.from(event.clipboardData?.files ?? []);
      if (pasted.length === 0) return;
      event.preventDefault();
      this.add(pasted);
    });
    target.addEventListener('dragover', (event) => {
      if (!event.dataTransfer?.types.includes('Files')) return;
      event.preventDefault();
      target.classList.add('dropping');
    });
    target.addEventListener('dragleave', () => target.classList.remove('dropping'));
    target.addEventListener('drop', (event) => {
      target.classList.remove('dropping');
      const dropped = Array.from(event.dataTransfer?.files ?? []);
      if (dropped.length === 0) return;
      event.preventDefault();
      this.add(dropped);
    });
  }

  add(files: File[]): void {
    for (const file of files) {
      const chip = h(
        'div',
        { class: 'attachment-chip', 'data-state': 'uploading' },
        h('span', { class: 'attachment-name' }, file.name || 'pasted image'),
        h('span', { class: 'attachment-state' }, 'preparing…'),
      );
      const item: Pending = { chip, name: file.name || 'pasted image', upload: this.upload(file, chip) };
      const remove = h('button', { type: 'button', class: 'attachment-remove', 'aria-label': `Remove ${item.name}` }, '×');
      remove.addEventListener('click', () => this.drop(item));
      chip.append(remove);
      // A failure is shown on its chip; take() reports it.
      item.upload.catch(() => undefined);
      this.pending.push(item);
      this.element.append(chip);
    }
    this.element.hidden = this.pending.length === 0;
  }

  /**
   * Takes the tray's files for the message being sent: waits for their uploads (their chips show the
   * progress meanwhile), then removes them. The attachments uploaded, and the names of those that failed.
   */
  async take(): Promise<{ attachments: AttachmentInfo[]; failed: string[] }> {
    const items = this.pending;
    this.pending = [];
    for (const item of items) item.chip.querySelector('.attachment-remove')?.remove();
    const attachments: AttachmentInfo[] = [];
    const failed: string[] = [];
    for (const item of items) {
      try {
        attachments.push(await item.upload);
      } catch (error) {
        failed.push(`${item.name} (${(error as Error).message})`);
      }
    }
    for (const item of items) item.chip.remove();
    this.element.hidden = this.pending.length === 0;
    return { attachments, failed };
  }

  private drop(item: Pending): void {
    this.pending = this.pending.filter((p) => p !== item);
    item.chip.remove();
    this.element.hidden = this.pending.length === 0;
  }

  private async upload(file: File, chip: HTMLElement): Promise<AttachmentInfo> {
    const state = chip.querySelector('.attachment-state')!;
    try {
      const image = isPhoto(file) ? await prepareImage(file) : undefined;
      const bytes = image?.bytes ?? new Uint8Array(await file.arrayBuffer());
      const mime = image?.mime ?? (file.type || 'application/octet-stream');
      // A photo leaves as a JPEG: its name says so.
      const name = image ? `${(file.name || 'photo').replace(/\.[^.]+$/, '')}.jpg` : file.name || 'file';
      const preview = image ? `data:${mime};base64,${toBase64(bytes)}` : undefined;
      if (preview) chip.prepend(h('img', { class: 'attachment-chip-image', src: preview, alt: '' }));
      const info = await uploadBytes(this.connection, bytes, name, mime, (done) => {
        state.textContent = `${Math.round((done / bytes.length) * 100)} %`;
      });
      if (preview) this.thumbnails.remember(info.attachment_id, preview);
      chip.dataset.state = 'ready';
      state.textContent = formatSize(info.size);
      return info;
    } catch (error) {
      chip.dataset.state = 'failed';
      state.textContent = `failed: ${(error as Error).message}`;
      throw error;
    }
  }
}

/** Uploads bytes in chunks (attachment_begin, attachment_chunk in order, attachment_end). */
export async function uploadBytes(connection: ServiceConnection, bytes: Uint8Array, name: string, mime: string, progress: (sent: number) => void): Promise<AttachmentInfo> {
  const begun = await connection.request({ type: 'attachment_begin', name, mime, size: bytes.length, sha256: await sha256Hex(bytes) });
  if (begun.status !== 'ok') throw new Error(begun.error);
  const { attachment_id, chunk_size } = begun.data;
  for (let index = 0; index * chunk_size < bytes.length; index++) {
    const chunk = bytes.subarray(index * chunk_size, (index + 1) * chunk_size);
    const sent = await connection.request({ type: 'attachment_chunk', attachment_id, index, data: toBase64(chunk) });
    if (sent.status !== 'ok') throw new Error(sent.error);
    progress(sent.data.received);
  }
  const ended = await connection.request({ type: 'attachment_end', attachment_id });
  if (ended.status !== 'ok') throw new Error(ended.error);
  return ended.data;
}

/** The attachments of messages on screen: image thumbnails (read once, kept by id) and file chips. */
export class AttachmentThumbnails {
  private readonly images = new Map<string, Promise<string>>();

  constructor(private readonly connection: ServiceConnection) {}

  /** An image this page uploaded: shown from its own bytes, never read back. */
  remember(attachmentId: string, dataUrl: string): void {
    this.images.set(attachmentId, Promise.resolve(dataUrl));
  }

  /**
   * Adds the attachments under a message bubble (once); under a tool card (a collapsed <details>), right
   * after it, so an image the agent read shows without opening the card.
   */
  show(node: HTMLElement, attachments: readonly AttachmentInfo[] | undefined): void {
    if (!attachments?.length || node.dataset.attachmentsShown) return;
    node.dataset.attachmentsShown = 'true';
    const box = h('div', { class: 'attachments' });
    for (const attachment of attachments) {
      if (attachment.kind === 'image') {
        const img = h('img', { class: 'attachment-image', alt: attachment.name, 'data-attachment-id': attachment.attachment_id });
        this.dataUrl(attachment).then(
          (url) => (img.src = url),
          () => img.replaceWith(fileChip(attachment)),
        );
        box.append(img);
      } else {
        box.append(fileChip(attachment));
      }
    }
    if (node.tagName === 'DETAILS') node.after(box);
    else node.append(box);
  }

  private dataUrl(attachment: AttachmentInfo): Promise<string> {
    let url = this.images.get(attachment.attachment_id);
    if (!url) {
      url = download(this.connection, attachment.attachment_id).then((base64) => `data:${attachment.mime};base64,${base64}`);
      url.catch(() => this.images.delete(attachment.attachment_id));
      this.images.set(attachment.attachment_id, url);
    }
    return url;
  }
}

/** An attachment's bytes in base64, read in chunks with get_attachment. */
async function download(connection: ServiceConnection, attachmentId: string): Promise<string> {
  const parts: Uint8Array[] = [];
  for (let offset: number | null = 0; offset !== null;) {
    const answer: EnvelopeOf<'get_attachment'> = await connection.request({ type: 'get_attachment', attachment_id: attachmentId, offset });
    if (answer.status !== 'ok') throw new Error(answer.error);
    parts.push(fromBase64(answer.data.data));
    offset = answer.data.next_offset;
  }
  const whole = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return toBase64(whole);
}

function fileChip(attachment: AttachmentInfo): HTMLElement {
  return h('span', { class: 'attachment-file', title: attachment.mime }, `${attachment.name} · ${formatSize(attachment.size)}`);
}

// Drawn, not emoji: a page without an emoji font (the editor on Linux, a headless browser) shows these too.
const PAPERCLIP = 'M16.5 6.5v10a4.5 4.5 0 0 1-9 0V5a3 3 0 0 1 6 0v10.5a1.5 1.5 0 0 1-3 0V6.5';
const CAMERA = 'M4 7h3l2-2.5h6L17 7h3a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V8a1 1 0 0 1 1-1zM12 16.5a3.5 3.5 0 1 0 0-7 3.5 3.5 0 0 0 0 7z';

const icon = (path: string) => strokeIcon(path, 24, 1.8);

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  // In slices: String.fromCharCode takes a bounded number of arguments.
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
