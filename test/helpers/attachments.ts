import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { ATTACHMENT_CHUNK_BYTES } from '../../src/protocol';

type Frame = Record<string, unknown>;
type Request = (frame: Frame) => Promise<Frame>;

export const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Uploads bytes as a client does (attachment_begin, the chunks in order, attachment_end) and returns attachment_end's answer. */
export async function uploadAttachment(request: Request, bytes: Buffer, name: string, mime: string): Promise<Frame> {
  const begun = await request({ type: 'attachment_begin', name, mime, size: bytes.length, sha256: sha256(bytes) });
  if (begun.status !== 'ok') return begun;
  const { attachment_id } = begun.data as { attachment_id: string };
  for (let index = 0; index * ATTACHMENT_CHUNK_BYTES < bytes.length; index++) {
    const data = bytes.subarray(index * ATTACHMENT_CHUNK_BYTES, (index + 1) * ATTACHMENT_CHUNK_BYTES).toString('base64');
    const sent = await request({ type: 'attachment_chunk', attachment_id, index, data });
    if (sent.status !== 'ok') return sent;
  }
  return request({ type: 'attachment_end', attachment_id });
}

/** Reads a stored attachment back through get_attachment, chunk by chunk. */
export async function downloadAttachment(request: Request, attachmentId: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let offset: number | null = 0; offset !== null;) {
    const reply = await request({ type: 'get_attachment', attachment_id: attachmentId, offset });
    if (reply.status !== 'ok') throw new Error(`get_attachment failed: ${JSON.stringify(reply)}`);
    const data = reply.data as { data: string; next_offset: number | null };
    parts.push(Buffer.from(data.data, 'base64'));
    offset = data.next_offset;
  }
  return Buffer.concat(parts);
}

/** A PNG signature followed by `size` - 8 random bytes: an image by its magic bytes, whatever its claimed type. */
export function pngLike(size: number): Buffer {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7919 + (i >> 8)) & 0xff;
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
  return bytes;
}

/** Waits until the conversation lists `count` messages waiting behind its running turn. */
export async function waitQueued(client: { request: Request }, conversationId: string, count: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    const listed = (await client.request({ type: 'list_conversations' })).data as { conversations: { id: string; queued: unknown[] }[] };
    if (listed.conversations.find((c) => c.id === conversationId)?.queued.length === count) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`${count} messages never waited in ${conversationId}`);
}
