import type { AttachmentInfo } from '../../protocol';

/** What a user message stores of each attachment (messages.data.attachments): what clients see, and the blob's hash. */
export interface StoredAttachment extends AttachmentInfo {
  hash: string;
}

/** The image types vision models accept, told by their first bytes (a claimed mime is never trusted). */
const IMAGE_SIGNATURES: { mime: string; matches: (b: Uint8Array) => boolean }[] = [
  { mime: 'image/jpeg', matches: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { mime: 'image/png', matches: (b) => [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((v, i) => b[i] === v) },
  { mime: 'image/gif', matches: (b) => ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a' },
  { mime: 'image/webp', matches: (b) => ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP' },
];

function ascii(bytes: Uint8Array, from: number, to: number): string {
  return bytes.length < to ? '' : String.fromCharCode(...bytes.subarray(from, to));
}

/** The image type of these bytes (JPEG, PNG, GIF, WebP), or undefined when they are not one. */
export function imageTypeOf(bytes: Uint8Array): string | undefined {
  return IMAGE_SIGNATURES.find((s) => s.matches(bytes))?.mime;
}

/** The attachments a stored user message carries (its `data`), or none. */
export function storedAttachmentsOf(data: unknown): StoredAttachment[] {
  const list = (data as { attachments?: unknown } | null)?.attachments;
  return Array.isArray(list) ? (list as StoredAttachment[]) : [];
}

/** What clients see of stored attachments (no hash). */
export function attachmentInfoOf({ attachment_id, name, mime, kind, size }: StoredAttachment): AttachmentInfo {
  return { attachment_id, name, mime, kind, size };
}

/**
 * A file name safe to create inside a folder: the last path segment only, no control or reserved
 * characters, no leading dots (never `..` or a hidden file), at most 100 characters.
 */
export function safeFileName(name: string): string {
  const last = name.split(/[\\/]/).pop() ?? '';
  const cleaned = last
    .replace(/[\u0000-\u001f\u007f<>:"|?*]/g, '_')
    .replace(/^[.\s]+/, '')
    .trim();
  const chars = [...cleaned];
  return (chars.length > 100 ? chars.slice(chars.length - 100).join('') : cleaned) || 'attachment';
}
