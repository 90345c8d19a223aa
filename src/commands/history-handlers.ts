import path from 'node:path';
import { ServiceError, type CommandOf, type ResultOf } from '../protocol';
import { canAccess } from '../protocol/sources';
import { jsonWithField, withDataText } from '../protocol/wire-text';
import { backupDataDir, type MessageMatch, type MessageRow } from '../store';
import { actorOf } from './audit-actor';
import { backupEntry } from './audit-records';
import type { CommandContext } from './context';
import { clientMessagesOf, exportFileName, renderExport } from './conversation-export';
import { readDurable } from './durable-read';
import { renderedExportKey } from './rendered-exports';
import { ownConversationsSource, type ClientSession } from './session';

// The history as a whole (docs/protocol.md, "Search, export and backup"): search it, take a
// conversation away as a file, back the data directory up.

/** Most conversations of a webhook account searched one by one (it sees only its own). */
const MAX_ACCOUNT_CONVERSATIONS = 500;

/** Hits the session may see: a webhook account only in its own conversations, as get_messages. */
async function visibleHits(command: CommandOf<'search_messages'>, session: ClientSession, ctx: CommandContext): Promise<MessageMatch[]> {
  const options = { limit: command.limit };
  if (command.conversation_id !== undefined) {
    ctx.agent.requireConversation(command.conversation_id, session.source);
    return ctx.store.messages.search(command.query, { ...options, conversationId: command.conversation_id });
  }
  const source = ownConversationsSource(session);
  if (source === undefined) return ctx.store.messages.search(command.query, options);
  const own = ctx.store.conversations.list({ limit: MAX_ACCOUNT_CONVERSATIONS, source });
  const hits: MessageMatch[] = [];
  for (const c of own) hits.push(...(await ctx.store.messages.search(command.query, { ...options, conversationId: c.id })));
  return hits.sort((a, b) => b.seq - a.seq).slice(0, command.limit);
}

export async function searchMessages(command: CommandOf<'search_messages'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'search_messages'>> {
  const hits = await visibleHits(command, session, ctx);
  const answer: ResultOf<'search_messages'>['hits'] = [];
  for (const hit of hits) {
    const conversation = ctx.store.conversations.get(hit.conversation_id);
    // Deleted meanwhile, or (defence in depth) not this session's to see.
    if (!conversation || !canAccess(session.source, conversation.source)) continue;
    answer.push({
      message_id: hit.message_id,
      conversation_id: hit.conversation_id,
      conversation_title: conversation.title,
      role: hit.role,
      timestamp: hit.timestamp,
      snippet: hit.snippet,
      highlights: hit.highlights,
    });
  }
  await readDurable(ctx.store);
  return { hits: answer };
}

/** The `until` of an export: the last message it holds, by its number in the store. */
function parseUntil(until: string | undefined): number | undefined {
  if (until === undefined) return undefined;
  if (!/^[0-9]{1,15}$/.test(until)) throw new ServiceError('invalid_request', 'until: send back the `until` of the first piece');
  return Number(until);
}

export async function exportConversation(command: CommandOf<'export_conversation'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'export_conversation'>> {
  const conversation = ctx.agent.requireConversation(command.conversation_id, session.source);
  const asked = parseUntil(command.until);
  if (command.offset !== undefined && command.offset > 0 && asked === undefined) throw new ServiceError('invalid_request', 'until: a piece after the first needs the `until` the first one answered');
  // Messages are append-only: those up to `until` are the same at every piece, so the pieces fit together
  // and the later pieces are slices of the first one's rendering (kept in ctx.exports).
  const render = async (all: MessageRow[], until: number) =>
    renderExport(
      conversation,
      await clientMessagesOf(
        all.filter((m) => m.seq <= until),
        ctx.store.usage,
      ),
      command.format,
    );
  let until: number;
  let key: string;
  let text: string;
  if (asked === undefined) {
    const all = await ctx.store.messages.after(command.conversation_id, 0);
    until = all.length > 0 ? all[all.length - 1].seq : 0;
    key = renderedExportKey(conversation.id, until, command.format);
    text = await ctx.exports.get(key, () => render(all, until));
  } else {
    until = asked;
    key = renderedExportKey(conversation.id, until, command.format);
    text = await ctx.exports.get(key, async () => render(await ctx.store.messages.after(command.conversation_id, 0), asked));
  }
  await readDurable(ctx.store);
  const offset = command.offset ?? 0;
  if (offset > text.length) throw new ServiceError('invalid_request', `offset: the export has ${text.length} characters`);
  const { end, json } = ctx.exports.piece(key, text, offset);
  const result: ResultOf<'export_conversation'> = {
    conversation_id: conversation.id,
    format: command.format,
    file_name: exportFileName(conversation.title, command.format),
    mime_type: command.format === 'json' ? 'application/json' : 'text/markdown',
    text: text.slice(offset, end),
    offset,
    next_offset: end < text.length ? end : null,
    total_chars: text.length,
    until: String(until),
  };
  // The piece's text was serialized and encoded to measure its frame: the answer carries those bytes.
  return withDataText(result, jsonWithField(result, 'text', json));
}

/** The owner's (roles.ts): the backup holds every conversation and service.json with its secrets. */
export async function backup(command: CommandOf<'backup'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'backup'>> {
  if (!path.isAbsolute(command.path)) throw new ServiceError('invalid_request', "path: give an absolute path (the service does not share the caller's working directory)");
  let done: ResultOf<'backup'>;
  try {
    done = await backupDataDir(ctx.store, command.path);
    ctx.logger.info('store.backup', { path: done.path, files: done.files.length });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    ctx.logger.warn('store.backup_failed', { path: command.path, error: message });
    throw new ServiceError('invalid_request', `backup failed: ${message}`);
  }
  // Recorded once the copy is complete (the backup itself holds the record up to before it).
  await ctx.store.audit.append(backupEntry(actorOf(session, ctx.store.devices), done.path, done.files.length));
  return done;
}

export const historyHandlers = {
  search_messages: searchMessages,
  export_conversation: exportConversation,
  backup,
};
