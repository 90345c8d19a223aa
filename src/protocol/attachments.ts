import * as z from 'zod';
import { command } from './command-frame';
import { displayNameField } from './display-name-field';
import { lazySchema } from './lazy-schema';
import { MAX_ATTACHMENT_BYTES } from './attachment-limit';

/**
 * Attachments (docs/protocol.md, "Attachments"): a file is uploaded in chunks small enough for any
 * transport (a LAN socket, the relay's end-to-end tunnel: every frame stays under 1 MiB), then
 * referenced by id in `chat`.
 */

/** Bytes of one chunk (its base64 is 512 KiB: with the envelope and the tunnel's encryption a frame stays well under 1 MiB). */
export const ATTACHMENT_CHUNK_BYTES = 384 * 1024;
/** The largest file (its own module: the phone page reads it without this module's schemas). */
export { MAX_ATTACHMENT_BYTES };
/** Declared bytes of unfinished uploads one user (source and credential kind) may have at once. */
export const MAX_UPLOAD_BYTES_PER_USER = 60 * 1024 * 1024;
/** Declared bytes of all unfinished uploads at once (they are held in memory until `attachment_end`). */
export const MAX_UPLOAD_BYTES_TOTAL = 150 * 1024 * 1024;
/** Attachments one chat message may carry. */
export const MAX_ATTACHMENTS_PER_MESSAGE = 10;
/**
 * Finished uploads no message carries yet that one person keeps (their newest): a finished upload is
 * stored on disk, so without a bound a person could fill the disk with files nobody ever sees. Two
 * messages' worth, so files chosen for a message on two devices are all still there when it is sent.
 */
export const MAX_UNSENT_ATTACHMENTS = 2 * MAX_ATTACHMENTS_PER_MESSAGE;
/** Their bytes at most (the newest always kept): two messages of the largest files. */
export const MAX_UNSENT_ATTACHMENT_BYTES = MAX_UNSENT_ATTACHMENTS * MAX_ATTACHMENT_BYTES;
/** An unfinished upload without a chunk for this long is dropped. */
export const UPLOAD_IDLE_TIMEOUT_MS = 10 * 60 * 1000;

/** `image`: a JPEG, PNG, GIF or WebP by its bytes (what vision models accept); anything else is a `file`. */
export const AttachmentKind = lazySchema(() => z.enum(['image', 'file']));
export type AttachmentKind = z.infer<typeof AttachmentKind>;

/** An attachment as messages carry it (get_messages, chat.message) and `attachment_end` answers it. */
export const AttachmentInfo = lazySchema(() =>
  z.object({
    attachment_id: z.string(),
    name: z.string(),
    /** For an image, the type its bytes show (not the one claimed); else the claimed one. */
    mime: z.string(),
    kind: AttachmentKind,
    size: z.number().int(),
  }),
);
export type AttachmentInfo = z.infer<typeof AttachmentInfo>;

export const AttachmentId = lazySchema(() => z.string({ error: 'attachment_id must be a string' }).regex(/^[A-Za-z0-9_-]{1,64}$/, { error: 'attachment_id is not an attachment id' }));

export const AttachmentBeginCommand = lazySchema(() =>
  command('attachment_begin', {
    name: displayNameField('name', 255),
    mime: z
      .string({ error: 'mime must be a string' })
      .max(127, { error: 'mime must be at most 127 characters' })
      .regex(/^[\w.+-]+\/[\w.+-]+$/, { error: 'mime must be a media type such as image/jpeg' }),
    size: z.number({ error: 'size must be an integer' }).int({ error: 'size must be an integer' }).min(1, { error: 'size must be at least 1' }),
    sha256: z.string({ error: 'sha256 must be a string' }).regex(/^[0-9a-fA-F]{64}$/, { error: 'sha256 must be 64 hex digits' }),
  }),
);

export const AttachmentChunkCommand = lazySchema(() =>
  command('attachment_chunk', {
    attachment_id: AttachmentId,
    index: z.number({ error: 'index must be an integer' }).int({ error: 'index must be an integer' }).min(0, { error: 'index must be at least 0' }),
    /** The chunk's bytes in base64: ATTACHMENT_CHUNK_BYTES each, the last one the rest. */
    data: z.string({ error: 'data must be a base64 string' }).max(Math.ceil(ATTACHMENT_CHUNK_BYTES / 3) * 4, { error: `data must hold at most ${ATTACHMENT_CHUNK_BYTES} bytes` }),
  }),
);

export const AttachmentEndCommand = lazySchema(() => command('attachment_end', { attachment_id: AttachmentId }));

/** Reads a stored attachment in chunks (`offset` in bytes), from any transport. */
export const GetAttachmentCommand = lazySchema(() =>
  command('get_attachment', {
    attachment_id: AttachmentId,
    offset: z.number({ error: 'offset must be an integer' }).int({ error: 'offset must be an integer' }).min(0, { error: 'offset must be at least 0' }).optional().default(0),
  }),
);

export const AttachmentResults = lazySchema(() => ({
  attachment_begin: z.object({ attachment_id: z.string(), chunk_size: z.number().int(), chunks: z.number().int() }),
  attachment_chunk: z.object({ attachment_id: z.string(), received: z.number().int(), next_index: z.number().int() }),
  attachment_end: AttachmentInfo,
  get_attachment: AttachmentInfo.extend({
    offset: z.number().int(),
    /** The bytes from `offset` (at most ATTACHMENT_CHUNK_BYTES), base64. */
    data: z.string(),
    /** Where the next chunk starts; null after the last. */
    next_offset: z.number().int().nullable(),
  }),
}));
