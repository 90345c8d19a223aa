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
import { readKept, writeKept, type KeptStorage } from './kept-list';
import { sha256Hex } from './sha256';

interface Pending {
  chip: HTMLElement;
  name: string;
  upload: Promise<AttachmentInfo>;
  /** Its upload, once finished: what a reload finds in the tray (`remote-assistant.tray`). */
  done?: AttachmentInfo;
  /** Taken out of the tray with its ×: its copy is not kept once its upload ends. */
  removed?: boolean;
  /** Its upload failed: not kept for a reload. */
  failed?: boolean;
  /** Still uploading when the page closed (kept as its name alone): shown failed, kept until removed or sent. */
  unfinished?: boolean;
}

/** What a reload finds of a chip: its finished upload, or the name of a file whose upload the page's closing cut. */
type KeptChip = AttachmentInfo | { name: string; unfinished: true };

/** Said on the chip of a file still uploading when the page closed (its bytes are not kept); its last words open the file picker. */
const UNFINISHED_WHY = 'not uploaded before the page closed: ';
const UNFINISHED_AGAIN = 'attach it again';
const UNFINISHED = UNFINISHED_WHY + UNFINISHED_AGAIN;

/** A file's bytes as this page uploaded them, kept until a message carrying them is stored (`release`). */
interface Copy {
  bytes: Uint8Array;
  name: string;
  mime: string;
}

const TRAY_KEY = 'remote-assistant.tray';

/** The pictures and files chosen for the next message, uploading while the user types. */
export class AttachmentTray {
  readonly element: HTMLElement;
  /** The controls for the message box: attach (files, photo library) and camera. */
  readonly controls: HTMLElement[];
  private pending: Pending[] = [];
  /** Opens the file picker (the attach button's). */
  private readonly choose: () => void;
  /**
   * The bytes of the files this page uploaded, by attachment id, until the message carrying them is stored: the
   * computer keeps a person's newest 20 unsent uploads (MAX_UNSENT_ATTACHMENTS), so a message waiting offline
   * may find its upload let go; it is uploaded again from here (`uploadAgain`). Memory only: not after a reload.
   */
  private readonly copies = new Map<string, Copy>();

  constructor(
    private readonly connection: ServiceConnection,
    private readonly thumbnails: AttachmentThumbnails,
    /** Where the tray's finished uploads are kept for a reload (the phone's machine storage); none in the editor's view. */
    private readonly storage?: KeptStorage,
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
    this.choose = () => files.click();
    const shoot = h('button', { type: 'button', class: 'button camera', title: 'Take a photo', 'aria-label': 'Take a photo' }, icon(CAMERA));
    shoot.addEventListener('click', () => camera.click());
    // The camera button only where there is a camera to point: a touch screen.
    shoot.hidden = !globalThis.matchMedia?.('(pointer: coarse)').matches;
    this.controls = [attach, shoot, files, camera];
    // Chosen and uploaded before a reload (or the phone's browser dropping the page), not sent: there again.
    const kept = readKept<KeptChip>(storage, TRAY_KEY, (chip) => typeof chip.name === 'string' && ('unfinished' in chip || typeof chip.attachment_id === 'string'));
    for (const chip of kept) {
      if ('unfinished' in chip) this.restoreUnfinished([chip.name]);
      else this.restore([chip]);
    }
  }

  get count(): number {
    return this.pending.length;
  }

  /** The names of the files for the next message (`take` waits for their uploads). */
  get names(): string[] {
    return this.pending.map((item) => item.name);
  }

  /** Files whose upload the page's closing cut (their bytes went with it): named on failed chips, to attach again. */
  restoreUnfinished(names: readonly string[]): void {
    for (const name of names) this.addChip(name, () => Promise.reject(new Error(UNFINISHED)), true);
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
      const name = file.name || 'pasted image';
      // Attached again: the chip that asked for it goes.
      for (const item of this.pending.filter((p) => p.unfinished && p.name === name)) this.drop(item);
      this.addChip(name, (chip) => this.upload(file, chip));
    }
  }

  /** Uploads already made (kept over a reload, or a message's put back) join the tray, ready. */
  restore(attachments: readonly AttachmentInfo[]): void {
    for (const info of attachments) {
      this.addChip(info.name, (chip) => {
        chip.dataset.state = 'ready';
        chip.querySelector('.attachment-state')!.textContent = formatSize(info.size);
        if (info.kind === 'image') this.showPreview(chip, info);
        return Promise.resolve(info);
      });
    }
  }

  /** An image's thumbnail on its chip, read back once connected (a reload fills the tray before the connection opens). */
  private showPreview(chip: HTMLElement, info: AttachmentInfo): void {
    let asked = false;
    const stop = this.connection.onState(({ state }) => {
      if (state !== 'open' || asked) return;
      asked = true;
      // Called at once by onState when already open: `stop` is there after this call.
      queueMicrotask(() => stop());
      this.thumbnails.preview(info).then((src) => chip.prepend(h('img', { class: 'attachment-chip-image', src, alt: '' })), ignore);
    });
  }

  /**
   * A message's attachments the computer let go, uploaded again from this page's copies: the new ones (one it could
   * not upload now, the connection lost again, as it was, its copy kept), and the names of those it holds no copy of
   * (chosen before a reload, or on another device).
   */
  async uploadAgain(attachments: readonly AttachmentInfo[]): Promise<{ again: AttachmentInfo[]; missing: string[] }> {
    const again: AttachmentInfo[] = [];
    const missing: string[] = [];
    for (const attachment of attachments) {
      const copy = this.copies.get(attachment.attachment_id);
      if (!copy) {
        missing.push(attachment.name);
        continue;
      }
      const info = await uploadBytes(this.connection, copy.bytes, copy.name, copy.mime, ignore).catch(ignore);
      if (!info) {
        again.push(attachment);
        continue;
      }
      this.copies.delete(attachment.attachment_id);
      this.copies.set(info.attachment_id, copy);
      this.thumbnails.moved(attachment.attachment_id, info.attachment_id);
      again.push(info);
    }
    return { again, missing };
  }

  /** A message carrying these was stored (or refused for good): the page's copies of their bytes go. */
  release(attachments: readonly AttachmentInfo[] | undefined): void {
    for (const attachment of attachments ?? []) this.copies.delete(attachment.attachment_id);
  }

  private addChip(name: string, upload: (chip: HTMLElement) => Promise<AttachmentInfo>, unfinished = false): void {
    // Unfinished: what to do is on the chip (at 360 px the attach button sits a row below, far from the words).
    const again = unfinished ? h('button', { type: 'button', class: 'attachment-again', onclick: () => this.choose() }, UNFINISHED_AGAIN) : undefined;
    const state = h('span', { class: 'attachment-state' }, ...(again ? [UNFINISHED_WHY, again] : ['preparing…']));
    const chip = h('div', { class: 'attachment-chip', 'data-state': unfinished ? 'failed' : 'uploading' }, h('span', { class: 'attachment-name' }, name), state);
    const item: Pending = { chip, name, upload: upload(chip), unfinished };
    const remove = h('button', { type: 'button', class: 'attachment-remove', 'aria-label': `Remove ${item.name}` }, '×');
    remove.addEventListener('click', () => this.drop(item));
    chip.append(remove);
    // A failure is shown on its chip; take() reports it.
    item.upload.then(
      (info) => {
        item.done = info;
        if (item.removed) this.release([info]);
        this.save();
      },
      () => {
        item.failed = true;
        this.save();
      },
    );
    this.pending.push(item);
    this.element.append(chip);
    this.element.hidden = false;
    this.save();
  }

  /**
   * Takes the tray's files for the message being sent: waits for their uploads (their chips show the
   * progress meanwhile), then removes them. The attachments uploaded, and the names of those that failed.
   */
  async take(): Promise<{ attachments: AttachmentInfo[]; failed: string[] }> {
    const items = this.pending;
    this.pending = [];
    // Out of what a reload finds in the tray: the message taking them names them now (its outbox item's `uploading`).
    this.save();
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
    item.removed = true;
    this.pending = this.pending.filter((p) => p !== item);
    item.chip.remove();
    this.element.hidden = this.pending.length === 0;
    this.release(item.done && [item.done]);
    this.save();
  }

  private save(): void {
    writeKept(
      this.storage,
      TRAY_KEY,
      this.pending.flatMap((item): KeptChip[] => (item.done ? [item.done] : !item.failed || item.unfinished ? [{ name: item.name, unfinished: true }] : [])),
    );
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
      this.copies.set(info.attachment_id, { bytes, name, mime });
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

  /** The same bytes uploaded again under a new id (AttachmentTray.uploadAgain). */
  moved(from: string, to: string): void {
    const url = this.images.get(from);
    if (url) this.images.set(to, url);
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
        this.preview(attachment).then(
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

  /** An image attachment as a data URL (this page's own bytes, or read back once). */
  preview(attachment: AttachmentInfo): Promise<string> {
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

const ignore = () => undefined;

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
