import { homedir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { readExport, type EnvelopeOf, type ExportFormat, type SearchHit } from '../protocol';
import { call } from './backend';
import type { Requester } from './connection-info';

/** Pause in typing before the search is sent (as the chat page's search field). */
export const SEARCH_DEBOUNCE_MS = 250;
const SEARCH_LIMIT = 50;

const ROLE_LABEL: Record<SearchHit['role'], string> = { user: 'You', assistant: 'Assistant', tool: 'Tool', summary: 'Summary' };

export type HitItem = vscode.QuickPickItem & { hit?: SearchHit };

/** A hit as a quick pick row: its conversation, who and when, the snippet. Always shown: the service did the matching. */
export function hitItem(hit: SearchHit): HitItem {
  return {
    label: hit.conversation_title || 'Untitled',
    description: `${ROLE_LABEL[hit.role]} · ${new Date(hit.timestamp).toLocaleString()}`,
    detail: hit.snippet,
    alwaysShow: true,
    hit,
  };
}

/** The rows for one search answer: its hits, or one row saying why there are none. */
export function searchRows(answer: EnvelopeOf<'search_messages'>): HitItem[] {
  if (answer.status !== 'ok') return [{ label: `$(error) ${answer.error}`, alwaysShow: true }];
  if (answer.data.hits.length === 0) return [{ label: 'No messages match.', alwaysShow: true }];
  return answer.data.hits.map(hitItem);
}

/**
 * "Remote Assistant: Search History": a quick pick searched as you type (search_messages, debounced;
 * an answer to an older query is dropped). Choosing a hit calls `show` (the chat view opens the
 * conversation at the message).
 */
export async function searchHistory(backend: Requester | undefined, show: (hit: SearchHit) => Promise<void> | void): Promise<void> {
  if (!backend) throw new Error('the service is not running in any window');
  const pick = vscode.window.createQuickPick<HitItem>();
  pick.title = 'Remote Assistant: Search History';
  pick.placeholder = 'Words to find in every conversation (the last one may be the start of a word)';
  let timer: NodeJS.Timeout | undefined;
  let asked = 0;
  pick.onDidChangeValue((value) => {
    clearTimeout(timer);
    const query = value.trim();
    const ticket = ++asked;
    if (!query) {
      pick.items = [];
      pick.busy = false;
      return;
    }
    timer = setTimeout(() => {
      pick.busy = true;
      void backend
        .request({ type: 'search_messages', query, limit: SEARCH_LIMIT })
        .then((answer) => searchRows(answer as EnvelopeOf<'search_messages'>))
        .catch((error: Error) => [{ label: `$(error) ${error.message}`, alwaysShow: true }])
        .then((rows) => {
          if (ticket !== asked) return;
          pick.items = rows;
          pick.busy = false;
        });
    }, SEARCH_DEBOUNCE_MS);
  });
  return new Promise((resolve) => {
    pick.onDidAccept(() => {
      const hit = pick.selectedItems[0]?.hit;
      if (!hit) return;
      pick.hide();
      void show(hit);
    });
    pick.onDidHide(() => {
      clearTimeout(timer);
      pick.dispose();
      resolve();
    });
    pick.show();
  });
}

/** A conversation picked from the list (`verb`: what will be done to it); undefined when none or dismissed. */
async function pickConversation(backend: Requester, verb: string): Promise<string | undefined> {
  const { conversations } = await call(backend, { type: 'list_conversations', limit: 200 });
  if (conversations.length === 0) {
    void vscode.window.showInformationMessage(`Remote Assistant: no conversation to ${verb} yet.`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    conversations.map((c) => ({ label: c.title || 'Untitled', description: new Date(c.updated_at).toLocaleString(), detail: c.last_message ?? undefined, id: c.id })),
    { title: `Remote Assistant: ${verb[0].toUpperCase()}${verb.slice(1)} which conversation?`, matchOnDetail: true },
  );
  return picked?.id;
}

/**
 * "Remote Assistant: Compact Conversation...": summarises a conversation's older turns now
 * (compact_conversation), with an optional focus; the summary shows in the chat like any message.
 */
export async function compactConversation(backend: Requester | undefined, conversationId?: string): Promise<void> {
  if (!backend) throw new Error('the service is not running in any window');
  const id = conversationId ?? (await pickConversation(backend, 'compact'));
  if (!id) return;
  const focus = await vscode.window.showInputBox({
    title: 'Remote Assistant: Compact Conversation',
    prompt: 'What the summary must keep in particular (optional)',
    placeHolder: 'e.g. the API design',
  });
  if (focus === undefined) return;
  const made = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Remote Assistant: summarising the earlier turns' }, () =>
    call(backend, { type: 'compact_conversation', conversation_id: id, ...(focus.trim() ? { focus: focus.trim() } : {}) }),
  );
  const percent = Math.round((made.context_used / made.context_window) * 100);
  void vscode.window.showInformationMessage(`Remote Assistant: ${made.message.compaction?.messages ?? 0} messages summarised; the context is now about ${percent}% full.`);
}

const FORMATS: { label: string; description: string; format: ExportFormat }[] = [
  { label: 'Markdown', description: 'readable: messages, tool calls and their outputs', format: 'markdown' },
  { label: 'JSON', description: 'every message with its fields, for programs', format: 'json' },
];

/**
 * "Remote Assistant: Export Conversation...": a conversation (picked when none is given) as Markdown or
 * JSON (picked when not given), saved where the save dialog says. Returns the file written, if any.
 */
export async function exportConversation(backend: Requester | undefined, conversationId?: string, format?: ExportFormat): Promise<vscode.Uri | undefined> {
  if (!backend) throw new Error('the service is not running in any window');
  conversationId ??= await pickConversation(backend, 'export');
  if (!conversationId) return undefined;
  if (!format) {
    const picked = await vscode.window.showQuickPick(FORMATS, { title: 'Remote Assistant: Export as' });
    if (!picked) return undefined;
    format = picked.format;
  }
  const id = conversationId;
  const chosen = format;
  const file = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Remote Assistant: exporting the conversation' }, () =>
    readExport((frame) => backend.request(frame) as Promise<EnvelopeOf<'export_conversation'>>, id, chosen),
  );
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath ?? homedir();
  const target = await vscode.window.showSaveDialog({
    title: 'Remote Assistant: Export Conversation',
    defaultUri: vscode.Uri.file(join(folder, file.file_name)),
    filters: chosen === 'json' ? { JSON: ['json'] } : { Markdown: ['md'] },
  });
  if (!target) return undefined;
  await vscode.workspace.fs.writeFile(target, Buffer.from(file.text, 'utf8'));
  void vscode.window.showInformationMessage(`Remote Assistant: conversation saved to ${target.fsPath}.`);
  return target;
}
