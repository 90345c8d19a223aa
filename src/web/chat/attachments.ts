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
import { newClientId } from './client-id';
import type { KeptFile, KeptFiles } from './kept-files';
import { readKept, writeKept, type KeptStorage } from './kept-list';
import { sha256Hex } from './sha256';

interface Pending {
  chip: HTMLElement;
  name: string;
  /** Where its bytes are kept for a reload (KeptFiles), when they are. */
  key: string;
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
type KeptChip = AttachmentInfo | { name: string; unfinished: true; key?: string };

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

/** A file ready to upload: its bytes, and an image's thumbnail. */
type Prepared = Copy & { preview?: string };

const TRAY_KEY = 'remote-assistant.tray';
/** How many times a message's kept file is uploaded after a reload before the message goes without it. */
const RESUME_TRIES = 3;

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
   * may find its upload let go; it is uploaded again from here (`uploadAgain`), or after a reload from `kept`.
   */
  private readonly copies = new Map<string, Copy>();

  constructor(
    private readonly connection: ServiceConnection,
    private readonly thumbnails: AttachmentThumbnails,
    /** Where the tray's finished uploads are kept for a reload (the phone's machine storage); none in the editor's view. */
    private readonly storage?: KeptStorage,
    /** Where the bytes of the files attached here are kept for a reload (the phone's IndexedDB); none: memory only. */
    private readonly kept?: KeptFiles,
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
    const chips = readKept<KeptChip>(storage, TRAY_KEY, (chip) => typeof chip.name === 'string' && ('unfinished' in chip || typeof chip.attachment_id === 'string'));
    for (const chip of chips) {
      if ('unfinished' in chip) this.restoreUnfinished([chip.name], [chip.key]);
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

  /** Where the tray's files are kept for a reload (`names`' order). */
  get keys(): string[] {
    return this.pending.map((item) => item.key);
  }

  /**
   * Files whose upload the page's closing cut: uploaded again from their kept bytes; those not kept (their bytes went
   * with the page) named on failed chips, to attach again, and returned.
   */
  restoreUnfinished(names: readonly string[], keys: readonly (string | undefined)[] = []): string[] {
    return names.filter((name, i) => {
      const file = keys[i] === undefined ? undefined : this.kept?.get(keys[i]);
      if (file) this.addChip(name, (chip) => this.upload(chip, file.key, () => opened(this.connection).then(() => fromKept(file))), file.key);
      else this.addChip(name, () => Promise.reject(new Error(UNFINISHED)), newClientId(), true);
      return !file;
    });
  }

  /** Whether every one of these files is kept (a message cut mid-upload by a reload can go as written: `resume`). */
  allKept(keys: readonly string[] | undefined, count: number): keys is string[] {
    return keys?.length === count && keys.every((key) => this.kept?.get(key));
  }

  /**
   * A message's files, cut mid-upload by the page's closing, uploaded from their kept bytes once connected (those
   * that finished before are not uploaded again): what `take` gives.
   */
  async resume(names: readonly string[], keys: readonly string[]): Promise<{ attachments: AttachmentInfo[]; failed: string[] }> {
    const attachments: AttachmentInfo[] = [];
    const failed: string[] = [];
    for (const [i, key] of keys.entries()) {
      const file = this.kept?.get(key);
      let info = file?.done;
      // The connection lost again meanwhile (a phone just back): tried again once it returns, RESUME_TRIES times in all.
      for (let tries = 0; file && !info && tries < RESUME_TRIES; tries++) {
        await opened(this.connection);
        info = await fromKept(file)
          .then((copy) => this.uploaded(key, copy, ignore))
          .catch(ignore);
      }
      if (info) attachments.push(info);
      else {
        failed.push(names[i]);
        this.forget([key]);
      }
    }
    return { attachments, failed };
  }

  /** Deletes the kept files neither the tray nor these (the outbox's) messages hold. */
  keepOnly(items: readonly { files?: string[]; attachments?: AttachmentInfo[] }[]): void {
    const keys = new Set([...this.keys, ...items.flatMap((item) => item.files ?? [])]);
    const ids = new Set([...this.pending.flatMap((item) => (item.done ? [item.done.attachment_id] : [])), ...items.flatMap((item) => item.attachments?.map((a) => a.attachment_id) ?? [])]);
    this.kept?.keepOnly((file) => keys.has(file.key) || (file.done !== undefined && ids.has(file.done.attachment_id)));
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
      const key = newClientId();
      this.addChip(name, (chip) => this.upload(chip, key, () => fromFile(file)), key);
    }
  }

  /** Uploads already made (kept over a reload, or a message's put back) join the tray, ready. */
  restore(attachments: readonly AttachmentInfo[]): void {
    for (const info of attachments) {
      this.addChip(
        info.name,
        (chip) => {
          chip.dataset.state = 'ready';
          chip.querySelector('.attachment-state')!.textContent = formatSize(info.size);
          if (info.kind === 'image') this.showPreview(chip, info);
          return Promise.resolve(info);
        },
        this.kept?.byUpload(info.attachment_id)?.key ?? newClientId(),
      );
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
      const kept = this.kept?.byUpload(attachment.attachment_id);
      const copy = this.copies.get(attachment.attachment_id) ?? (kept && (await fromKept(kept).catch(ignore)));
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
      if (kept) this.kept?.put(kept.key, { ...kept, done: info });
      this.thumbnails.moved(attachment.attachment_id, info.attachment_id);
      again.push(info);
    }
    return { again, missing };
  }

  /** A message carrying these was stored (or refused for good): the page's copies of their bytes go. */
  release(attachments: readonly AttachmentInfo[] | undefined): void {
    for (const attachment of attachments ?? []) {
      this.copies.delete(attachment.attachment_id);
      const kept = this.kept?.byUpload(attachment.attachment_id);
      if (kept) this.kept?.delete(kept.key);
    }
  }

  /** Files that will not go (failed, removed, their message given up): their kept bytes go. */
  forget(keys: readonly string[] | undefined): void {
    for (const key of keys ?? []) this.kept?.delete(key);
  }

  private addChip(name: string, upload: (chip: HTMLElement) => Promise<AttachmentInfo>, key: string, unfinished = false): void {
    // Unfinished: what to do is on the chip (at 360 px the attach button sits a row below, far from the words).
    const again = unfinished ? h('button', { type: 'button', class: 'attachment-again', onclick: () => this.choose() }, UNFINISHED_AGAIN) : undefined;
    const state = h('span', { class: 'attachment-state' }, ...(again ? [UNFINISHED_WHY, again] : ['preparing…']));
    const chip = h('div', { class: 'attachment-chip', 'data-state': unfinished ? 'failed' : 'uploading' }, h('span', { class: 'attachment-name' }, name), state);
    const item: Pending = { chip, name, key, upload: upload(chip), unfinished };
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
        this.forget([item.key]);
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
    this.forget([item.key]);
    this.save();
  }

  private save(): void {
    writeKept(
      this.storage,
      TRAY_KEY,
      this.pending.flatMap((item): KeptChip[] => (item.done ? [item.done] : !item.failed || item.unfinished ? [{ name: item.name, unfinished: true, key: item.key }] : [])),
    );
  }

  /** A chip's upload: its bytes kept for a reload first (the page may close before it ends), then sent. */
  private async upload(chip: HTMLElement, key: string, prepare: () => Promise<Prepared>): Promise<AttachmentInfo> {
    const state = chip.querySelector('.attachment-state')!;
    try {
      const { preview, ...copy } = await prepare();
      if (preview) chip.prepend(h('img', { class: 'attachment-chip-image', src: preview, alt: '' }));
      if (!this.kept?.get(key)) this.kept?.put(key, { name: copy.name, mime: copy.mime, bytes: new Blob([copy.bytes as Uint8Array<ArrayBuffer>]) });
      const info = await this.uploaded(key, copy, (done) => {
        state.textContent = `${Math.round((done / copy.bytes.length) * 100)} %`;
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

  /** Uploads a copy; its bytes known by the upload's id from then on (`uploadAgain`), here and kept. */
  private async uploaded(key: string, copy: Copy, progress: (sent: number) => void): Promise<AttachmentInfo> {
    const info = await uploadBytes(this.connection, copy.bytes, copy.name, copy.mime, progress);
    this.copies.set(info.attachment_id, copy);
    const kept = this.kept?.get(key);
    if (kept) this.kept?.put(key, { ...kept, done: info });
    return info;
  }
}

/** A chosen file's bytes as they are uploaded: a photo as a JPEG (its name says so), with its thumbnail. */
async function fromFile(file: File): Promise<Prepared> {
  const image = isPhoto(file) ? await prepareImage(file) : undefined;
  const bytes = image?.bytes ?? new Uint8Array(await file.arrayBuffer());
  const mime = image?.mime ?? (file.type || 'application/octet-stream');
  const name = image ? `${(file.name || 'photo').replace(/\.[^.]+$/, '')}.jpg` : file.name || 'file';
  return { bytes, name, mime, preview: image ? `data:${mime};base64,${toBase64(bytes)}` : undefined };
}

/** A kept file's bytes, read back (an image with its thumbnail). */
async function fromKept(file: KeptFile): Promise<Prepared> {
  const bytes = new Uint8Array(await file.bytes.arrayBuffer());
  return { bytes, name: file.name, mime: file.mime, preview: file.mime.startsWith('image/') ? `data:${file.mime};base64,${toBase64(bytes)}` : undefined };
}

/** Resolves once the connection is open. */
function opened(connection: ServiceConnection): Promise<void> {
  return new Promise((resolve) => {
    const stop = connection.onState(({ state }) => {
      if (state !== 'open') return;
      queueMicrotask(() => stop());
      resolve();
    });
  });
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
