import { randomUUID } from 'node:crypto';
import {
  ATTACHMENT_CHUNK_BYTES,
  MAX_ATTACHMENT_BYTES,
  MAX_UPLOAD_BYTES_PER_USER,
  MAX_UPLOAD_BYTES_TOTAL,
  MAX_UNSENT_ATTACHMENT_BYTES,
  MAX_UNSENT_ATTACHMENTS,
  ServiceError,
  UPLOAD_IDLE_TIMEOUT_MS,
  type AttachmentInfo,
  type CommandOf,
} from '../protocol';
import { hashBytes, type Store } from '../store';
import type { UnsentAttachment } from '../store/attachments';
import { blobReferences } from '../store/blob-refs';
import { imageTypeOf } from '../agent/attachments/content';

interface Upload {
  id: string;
  uploader: string;
  name: string;
  mime: string;
  size: number;
  sha256: string;
  chunks: Buffer[];
  received: number;
  timer: NodeJS.Timeout;
}

const formatMiB = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;

/**
 * Uploads in progress (docs/protocol.md, "Attachments"): chunks in order, held in memory until the end,
 * where the whole file's hash is checked and only then stored as a blob and recorded. A refused chunk
 * leaves the upload as it was (the client may send the right one); a wrong hash drops it. Nothing of an
 * unfinished or failed upload is ever stored, so no message can reference a partial file. An upload
 * without a chunk for UPLOAD_IDLE_TIMEOUT_MS is dropped.
 */
export class AttachmentUploads {
  private readonly uploads = new Map<string, Upload>();
  constructor(
    private readonly store: Pick<Store, 'blobs' | 'attachments' | 'db'>,
    private readonly idleTimeoutMs = UPLOAD_IDLE_TIMEOUT_MS,
  ) {}

  begin(command: CommandOf<'attachment_begin'>, uploader: string): { attachment_id: string; chunk_size: number; chunks: number } {
    if (command.size > MAX_ATTACHMENT_BYTES) {
      throw new ServiceError('payload_too_large', `${command.name} is ${formatMiB(command.size)}: an attachment may be at most ${formatMiB(MAX_ATTACHMENT_BYTES)}`);
    }
    const mine = this.inFlight((u) => u.uploader === uploader);
    if (mine + command.size > MAX_UPLOAD_BYTES_PER_USER) {
      throw new ServiceError('rate_limited', `uploads in progress would exceed ${formatMiB(MAX_UPLOAD_BYTES_PER_USER)}: finish them first (or let them expire)`);
    }
    this.roomBesideHeld(uploader, command.size);
    if (this.inFlight(() => true) + command.size > MAX_UPLOAD_BYTES_TOTAL) {
      throw new ServiceError('rate_limited', 'the service is receiving too many uploads at once: try again shortly');
    }
    const id = randomUUID();
    const upload: Upload = {
      id,
      uploader,
      name: command.name,
      mime: command.mime.toLowerCase(),
      size: command.size,
      sha256: command.sha256.toLowerCase(),
      chunks: [],
      received: 0,
      timer: this.expiry(id),
    };
    this.uploads.set(id, upload);
    return { attachment_id: id, chunk_size: ATTACHMENT_CHUNK_BYTES, chunks: Math.ceil(command.size / ATTACHMENT_CHUNK_BYTES) };
  }

  chunk(command: CommandOf<'attachment_chunk'>, uploader: string): { attachment_id: string; received: number; next_index: number } {
    const upload = this.own(command.attachment_id, uploader);
    const expected = upload.chunks.length;
    if (command.index < expected) throw new ServiceError('invalid_request', `chunk ${command.index} was already received: send chunk ${expected} next`);
    if (command.index > expected) throw new ServiceError('invalid_request', `chunk ${command.index} is out of order: send chunk ${expected} next`);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(command.data) || command.data.length % 4 !== 0) throw new ServiceError('invalid_request', 'data is not base64');
    const bytes = Buffer.from(command.data, 'base64');
    const left = upload.size - upload.received;
    const wanted = Math.min(ATTACHMENT_CHUNK_BYTES, left);
    if (bytes.length > left) throw new ServiceError('payload_too_large', `chunk ${command.index} goes past the declared size (${upload.size} bytes)`);
    if (bytes.length !== wanted) throw new ServiceError('invalid_request', `chunk ${command.index} must hold ${wanted} bytes, not ${bytes.length}`);
    upload.chunks.push(bytes);
    upload.received += bytes.length;
    upload.timer.refresh();
    return { attachment_id: upload.id, received: upload.received, next_index: upload.chunks.length };
  }

  async end(attachmentId: string, uploader: string): Promise<AttachmentInfo> {
    const upload = this.own(attachmentId, uploader);
    if (upload.received !== upload.size) {
      const chunks = Math.ceil(upload.size / ATTACHMENT_CHUNK_BYTES);
      throw new ServiceError('invalid_request', `the upload is incomplete: ${upload.chunks.length} of ${chunks} chunks received (send chunk ${upload.chunks.length} next)`);
    }
    this.drop(upload);
    // Checked again: a chat accepted since its begin may hold more of the person's files now.
    this.roomBesideHeld(uploader, upload.size);
    const bytes = Buffer.concat(upload.chunks);
    if (hashBytes(bytes) !== upload.sha256) {
      throw new ServiceError('invalid_request', `the bytes received do not match sha256: the upload of ${upload.name} is dropped, send it again`);
    }
    const image = imageTypeOf(bytes);
    const info: AttachmentInfo = { attachment_id: upload.id, name: upload.name, mime: image ?? upload.mime, kind: image ? 'image' : 'file', size: upload.size };
    // Held from blob collection until its row is written (a deletion's collection must not take the bytes meanwhile);
    // written even when stored, so the answer's time does not tell the uploader another person stored these bytes.
    await this.store.blobs.holding(
      async (put) => {
        await put(bytes);
        await this.store.attachments.add({ id: upload.id, hash: upload.sha256, name: info.name, mime: info.mime, kind: info.kind, size: info.size, uploader, created_at: new Date().toISOString() });
      },
      { writeEvenIfStored: true },
    );
    await this.keepNewestUnsent(uploader);
    return info;
  }

  /**
   * Refuses an upload when the person's files that waiting chats hold fill the bound: kept, it would be pushed
   * out at once (the held ones never are), and the bound stays the person's, held files included.
   */
  private roomBesideHeld(uploader: string, size: number): void {
    const waiting = this.heldOf(uploader);
    if (waiting.length >= MAX_UNSENT_ATTACHMENTS || waiting.reduce((n, row) => n + row.size, 0) + size > MAX_UNSENT_ATTACHMENT_BYTES) {
      throw new ServiceError('rate_limited', `${waiting.length} of your files wait in queued messages (the most kept): attach this once they have started`);
    }
  }

  /** The person's unsent uploads a waiting chat holds (none held at all: no query). */
  private heldOf(uploader: string): UnsentAttachment[] {
    const { holds } = this.store.attachments;
    return holds.size === 0 ? [] : this.store.attachments.unsentOf(uploader).filter((row) => holds.has(row.id));
  }

  /**
   * The person's unsent uploads past the bound (unsentBeyondBound) forgotten, and their bytes nothing else
   * refers to removed. Those a waiting chat holds count first and stay (`begin` keeps them under the bound).
   */
  private async keepNewestUnsent(uploader: string): Promise<void> {
    const unsent = this.store.attachments.unsentOf(uploader);
    const isHeld = (row: UnsentAttachment) => this.store.attachments.holds.has(row.id);
    const beyond = unsentBeyondBound([...unsent.filter(isHeld), ...unsent.filter((row) => !isHeld(row))]).filter((row) => !isHeld(row));
    if (beyond.length === 0) return;
    await this.store.blobs.collect(blobReferences(this.store.db), await this.store.attachments.dropUnsent(beyond));
  }

  private own(attachmentId: string, uploader: string): Upload {
    const upload = this.uploads.get(attachmentId);
    // Another user's upload is as unknown as one that expired.
    if (!upload || upload.uploader !== uploader) throw new ServiceError('not_found', `no upload ${attachmentId} in progress (unknown, finished or expired)`);
    return upload;
  }

  private inFlight(filter: (u: Upload) => boolean): number {
    let sum = 0;
    for (const upload of this.uploads.values()) if (filter(upload)) sum += upload.size;
    return sum;
  }

  private expiry(id: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const upload = this.uploads.get(id);
      if (upload) this.drop(upload);
    }, this.idleTimeoutMs);
    timer.unref();
    return timer;
  }

  private drop(upload: Upload): void {
    clearTimeout(upload.timer);
    this.uploads.delete(upload.id);
  }
}

/**
 * Of a person's unsent uploads (newest first), those past the bound: the newest MAX_UNSENT_ATTACHMENTS
 * whose bytes fit MAX_UNSENT_ATTACHMENT_BYTES are kept (the newest always), every older one goes.
 */
export function unsentBeyondBound<T extends Pick<UnsentAttachment, 'size'>>(newestFirst: readonly T[], maxCount = MAX_UNSENT_ATTACHMENTS, maxBytes = MAX_UNSENT_ATTACHMENT_BYTES): T[] {
  let bytes = 0;
  for (let kept = 0; kept < newestFirst.length; kept++) {
    bytes += newestFirst[kept].size;
    if (kept > 0 && (kept >= maxCount || bytes > maxBytes)) return newestFirst.slice(kept);
  }
  return [];
}
