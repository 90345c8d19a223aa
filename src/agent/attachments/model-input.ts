import { lstat } from 'node:fs/promises';
import type { BlobStore } from '../../store';
import type { Logger } from '../../log/logger';
import type { ChatMessage, ImageInput } from '../providers/types';
import { resolveWorkspacePath } from '../tools/workspace';
import { writeFileInWorkspace } from '../tools/anchored-fs';
import { safeFileName, type StoredAttachment } from './content';

/** Where attached files are saved for the model to read them with its file tools. */
export const ATTACHMENTS_FOLDER = '.remote-assistant/attachments';

export interface ModelInputDeps {
  blobs: Pick<BlobStore, 'get'>;
  workspaceRoots: () => string[];
  logger: Logger;
}

/**
 * The conversation as the model receives it: a user message's attached images become image input when
 * the model sees images; every other attachment (and images for a model that does not) is saved into
 * the workspace and named by path at the end of the message's text, so the model can open it with its tools.
 */
export async function withAttachments(messages: readonly ChatMessage[], seesImages: boolean, deps: ModelInputDeps): Promise<readonly ChatMessage[]> {
  // Most conversations carry none: then no promise per message (a long one made hundreds a step, issue 25), and no copy.
  if (!messages.some(hasAttachments)) return messages;
  return Promise.all(messages.map((message) => (hasAttachments(message) ? withItsAttachments(message, seesImages, deps) : message)));
}

/** A user message (the system's shape too, as ChatMessage types it). */
type UserMessage = Extract<ChatMessage, { role: 'system' | 'user' }>;

function hasAttachments(message: ChatMessage): message is UserMessage {
  return message.role === 'user' && (message.attachments?.length ?? 0) > 0;
}

/** One user message with its attachments as the model receives them (see withAttachments). */
async function withItsAttachments(message: UserMessage, seesImages: boolean, deps: ModelInputDeps): Promise<ChatMessage> {
  const images: ImageInput[] = [];
  const notes: string[] = [];
  for (const attachment of message.attachments ?? []) {
    const bytes = await deps.blobs.get(attachment.hash).catch(() => undefined);
    if (!bytes) notes.push(`[Attached ${attachment.name}: no longer available]`);
    else if (seesImages && attachment.kind === 'image') images.push({ mime: attachment.mime, base64: bytes.toString('base64') });
    else notes.push(await savedNote(attachment, bytes, deps));
  }
  const content = [message.content, ...notes].filter((part) => part.length > 0).join('\n\n');
  const { attachments: _refs, ...rest } = message;
  return { ...rest, content, ...(images.length > 0 ? { images } : {}) };
}

/** Saves an attachment into the workspace (once: the name holds its hash) and says where it is. */
async function savedNote(attachment: StoredAttachment, bytes: Buffer, deps: ModelInputDeps): Promise<string> {
  const relative = `${ATTACHMENTS_FOLDER}/${attachment.hash.slice(0, 8)}-${safeFileName(attachment.name)}`;
  try {
    const target = await resolveWorkspacePath(deps.workspaceRoots(), relative);
    const present = await lstat(target.path).then(
      (info) => info.isFile() && info.size === bytes.length,
      () => false,
    );
    if (!present) await writeFileInWorkspace(target, relative, bytes, true);
    return `[Attached file: ${relative} (${attachment.mime}, ${attachment.size} bytes)]`;
  } catch (error) {
    deps.logger.warn('attachment.not_saved', { attachment: attachment.attachment_id, error });
    return `[Attached file ${attachment.name} (${attachment.mime}, ${attachment.size} bytes) could not be saved into the workspace: ${(error as Error).message}]`;
  }
}
