import { createHash } from 'node:crypto';
import type { PermissionPreview, ServiceEvent } from '../../protocol';
import { askWords, partsText } from '../../protocol/tool-words';
import type { PushPayload } from '../../protocol/push-payload';
import { shortened } from '../../protocol/code-points';
import { sourceLabel } from '../../protocol/sources';

/**
 * What a notification says (docs/protocol.md, "Web Push"). The service worker shows `title` and
 * `body`, replaces a notification of the same `tag`, and opens `url` (relative to the page) when tapped.
 * A content-blind device gets only the kind and ids: the page fetches the rest through the tunnel.
 */

/** Lengths that keep a payload far under Web Push's 4 KB and readable on a lock screen. */
const TITLE_CHARS = 120;
const BODY_CHARS = 400;

/** Text as it goes out: secrets redacted by the caller's redactor, cut at a character (not a byte) limit. */
export type TextFilter = (text: string) => string;

function cut(text: string, max: number): string {
  return shortened(text.trim(), max);
}

export const promptTag = (conversationId: string) => `prompt:${conversationId}`;
export const runTag = (conversationId: string) => `run:${conversationId}`;

/** The Web Push `topic` of a tag: a short hash, since a topic is at most 32 URL-safe base64 characters. */
export function topicOf(tag: string): string {
  return createHash('sha256').update(tag).digest('base64url').slice(0, 22);
}

function pageUrl(conversationId: string, requestId?: string): string {
  const request = requestId ? `&request=${encodeURIComponent(requestId)}` : '';
  return `./?conversation=${encodeURIComponent(conversationId)}${request}`;
}

/**
 * What a prompt is about in one line beside its question: the command line, the path, or the tool's
 * arguments; undefined when only the tool's name is known (the question names it).
 */
function subjectOf(args: Record<string, unknown>, preview: PermissionPreview | undefined): string | undefined {
  if (preview?.kind === 'command') return preview.command;
  if (preview?.kind === 'diff') return preview.path;
  if (typeof args.command === 'string') return args.command;
  if (typeof args.path === 'string') return args.path;
  if (preview?.kind === 'arguments' && preview.text) return preview.text.split('\n')[0];
  return undefined;
}

type PermissionRequest = Extract<ServiceEvent, { event: 'permission.request' }>;

/** A line of the body (the warnings, the subject, the conversation's title) no longer than this. */
const LINE_CHARS = 200;

/**
 * A prompt's body under its question (`title`, already filtered): what the question does not say. A
 * command's warnings (⚠, in words: "rm -rf: deletes files…"), the command, path or arguments unless the
 * question says them whole ("Run npm test?" does; a command cut there, a tool without words, does not),
 * then the conversation's title.
 */
function promptBody(request: PermissionRequest, title: string, conversationTitle: string, text: TextFilter): string {
  const { preview } = request;
  const lines: string[] = [];
  if (preview?.kind === 'command' && preview.warnings.length > 0) lines.push(cut(text(`⚠ ${preview.warnings.join('; ')}`), LINE_CHARS));
  const subject = subjectOf(request.arguments, preview);
  const said = subject === undefined ? '' : text(subject).trim();
  if (said && !title.includes(said)) lines.push(cut(said, LINE_CHARS));
  // The conversation's title always ends the body: what comes before it is cut to leave it room.
  const named = cut(text(conversationTitle), LINE_CHARS);
  if (!named) return cut(lines.join('\n'), BODY_CHARS);
  return lines.length === 0 ? named : `${cut(lines.join('\n'), BODY_CHARS - named.length - 1)}\n${named}`;
}

export function promptPayload(request: PermissionRequest, conversationTitle: string, blind: boolean, text: TextFilter): PushPayload {
  const ids = { conversation_id: request.conversation_id, request_id: request.request_id };
  const tag = promptTag(request.conversation_id);
  if (blind) return { v: 1, kind: 'prompt', tag, blind: true, ...ids };
  // The permission card's question, in the same words ("Run npm test?"): the one home is the page's.
  const title = cut(text(partsText(askWords(request.tool, request.arguments))), TITLE_CHARS);
  return {
    v: 1,
    kind: 'prompt',
    tag,
    ...ids,
    title,
    body: promptBody(request, title, conversationTitle, text),
    url: pageUrl(request.conversation_id, request.request_id),
  };
}

/** The prompt was answered or expired anywhere: the worker closes the notification of the same tag. */
export function resolvedPayload(conversationId: string, requestId: string, blind: boolean): PushPayload {
  const ids = { conversation_id: conversationId, request_id: requestId };
  if (blind) return { v: 1, kind: 'resolved', tag: promptTag(conversationId), blind: true, ...ids };
  return { v: 1, kind: 'resolved', tag: promptTag(conversationId), ...ids, title: 'Answered', body: '', url: pageUrl(conversationId) };
}

export interface EndedRun {
  kind: 'finished' | 'failed' | 'webhook';
  conversationId: string;
  conversationTitle: string;
  /** The conversation's source (a webhook account's name is shown). */
  conversationSource: string;
  /** The reply (answered) or the failure's short reason. */
  text: string;
}

export function runPayload(run: EndedRun, blind: boolean, text: TextFilter): PushPayload {
  const tag = runTag(run.conversationId);
  if (blind) return { v: 1, kind: run.kind, tag, blind: true, conversation_id: run.conversationId };
  const title = run.kind === 'webhook' ? `${sourceLabel(run.conversationSource)}: ${run.conversationTitle}` : run.conversationTitle;
  return {
    v: 1,
    kind: run.kind,
    tag,
    conversation_id: run.conversationId,
    title: cut(text(title), TITLE_CHARS),
    body: cut(text(run.text), BODY_CHARS),
    url: pageUrl(run.conversationId),
  };
}

export const reviewTag = (conversationId: string) => `review:${conversationId}`;

/** "Ready for review": a worktree conversation's turn ended with changes (changes.ready). */
export function reviewPayload(ready: { conversationId: string; conversationTitle: string; files: number; additions: number; deletions: number }, blind: boolean, text: TextFilter): PushPayload {
  const tag = reviewTag(ready.conversationId);
  if (blind) return { v: 1, kind: 'review', tag, blind: true, conversation_id: ready.conversationId };
  return {
    v: 1,
    kind: 'review',
    tag,
    conversation_id: ready.conversationId,
    title: cut(text(`Ready for review: ${ready.conversationTitle}`), TITLE_CHARS),
    body: cut(`${ready.files} file${ready.files === 1 ? '' : 's'} changed, +${ready.additions} -${ready.deletions}`, BODY_CHARS),
    // Opens the conversation's Changes view (the page's deep link, src/web/push/deep-link.ts).
    url: `${pageUrl(ready.conversationId)}&view=changes`,
  };
}

export function testPayload(blind: boolean): PushPayload {
  if (blind) return { v: 1, kind: 'test', tag: 'test', blind: true };
  return { v: 1, kind: 'test', tag: 'test', title: 'Remote Assistant', body: 'Notifications work on this device.', url: './' };
}
