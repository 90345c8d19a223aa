import { ATTACHMENT_CHUNK_BYTES, ServiceError, type CommandOf, type CommandType, type ResultOf } from '../protocol';
import type { AttachmentRow } from '../store';
import type { StoredAttachment } from '../agent/attachments/content';
import type { CommandContext } from './context';
import { personOf, type ClientSession } from './session';

type AttachmentCommandType = Extract<CommandType, `attachment_${string}` | 'get_attachment'>;
type AttachmentHandler<T extends AttachmentCommandType> = (command: CommandOf<T>, session: ClientSession, ctx: CommandContext) => Promise<ResultOf<T>>;

/** Who uploads: the person (personOf), on any of their sockets; none for a webhook account. */
function uploaderKeyOf(session: ClientSession): string | undefined {
  if (session.source.kind === 'webhook' || session.principal === undefined) return undefined;
  return personOf(session);
}

function uploaderOf(session: ClientSession): string {
  const key = uploaderKeyOf(session);
  if (key === undefined) throw new ServiceError('unauthorized', 'attachments are uploaded by user clients: a webhook account sends text only');
  return key;
}

/**
 * An attachment this client may use or read (one home for the rule; docs/protocol.md "Attachments"): one no
 * message carries yet, its uploader's only; a sent one, whoever may see a conversation a message of which
 * carries it (the first that did, or another it was sent again in: AttachmentsRepo.carriers). Anything else
 * is not_found, as an unknown id (its existence is not told): a deleted conversation's attachment included
 * (its row went with it), its uploader too, and one whose conversations were all deleted while a chat naming
 * it waits in line (held until that message carries it).
 */
function visibleAttachment(attachmentId: string, session: ClientSession, ctx: CommandContext): AttachmentRow {
  const row = ctx.store.attachments.get(attachmentId);
  if (row !== undefined && row.conversation_id === null && row.uploader === uploaderKeyOf(session)) return row;
  if (row !== undefined && ctx.store.attachments.carriers(row.id).some((id) => canSee(id, session, ctx))) return row;
  throw new ServiceError('not_found', `attachment ${attachmentId} not found`);
}

function canSee(conversationId: string, session: ClientSession, ctx: CommandContext): boolean {
  try {
    ctx.agent.requireConversation(conversationId, session.source);
    return true;
  } catch {
    return false;
  }
}

/** The attachments a chat names, checked before anything is stored: each must be one this client may use. */
export function chatAttachments(ids: readonly string[] | undefined, session: ClientSession, ctx: CommandContext): StoredAttachment[] {
  if (!ids?.length) return [];
  if (new Set(ids).size !== ids.length) throw new ServiceError('invalid_request', 'attachments names the same attachment twice');
  return ids.map((id) => {
    const row = visibleAttachment(id, session, ctx);
    return { attachment_id: row.id, name: row.name, mime: row.mime, kind: row.kind, size: row.size, hash: row.hash };
  });
}

/** Upload and download of attachments (docs/protocol.md, "Attachments"). */
export const attachmentHandlers: { [T in AttachmentCommandType]: AttachmentHandler<T> } = {
  attachment_begin: async (command, session, ctx) => ctx.uploads.begin(command, uploaderOf(session)),
  attachment_chunk: async (command, session, ctx) => ctx.uploads.chunk(command, uploaderOf(session)),
  attachment_end: async (command, session, ctx) => ctx.uploads.end(command.attachment_id, uploaderOf(session)),

  async get_attachment(command, session, ctx) {
    const row = visibleAttachment(command.attachment_id, session, ctx);
    if (command.offset > row.size) throw new ServiceError('invalid_request', `offset ${command.offset} is past the end (${row.size} bytes)`);
    const bytes = await ctx.store.blobs.get(row.hash);
    if (!bytes) throw new ServiceError('server_error', `the bytes of attachment ${row.id} are missing from the blob store`);
    const end = Math.min(row.size, command.offset + ATTACHMENT_CHUNK_BYTES);
    return {
      attachment_id: row.id,
      name: row.name,
      mime: row.mime,
      kind: row.kind,
      size: row.size,
      offset: command.offset,
      data: bytes.subarray(command.offset, end).toString('base64'),
      next_offset: end < row.size ? end : null,
    };
  },
};
