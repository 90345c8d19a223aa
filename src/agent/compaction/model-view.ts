import { unitsCut } from '../../protocol/code-points';
import type { MessageRow } from '../../store';
import { estimateTokens, fitHistory } from '../history';
import type { ChatMessage } from '../providers/types';
import type { ToolCallData } from '../transcript';
import { messagesTokens } from './budget';

/**
 * What a stored `summary` message holds in `data`: a summary of every message of the conversation up
 * to `through_seq` (the model is sent it instead of them), or the notice that a compaction failed.
 */
export type SummaryData = { kind: 'summary'; through_seq: number; summarised: number; focus?: string } | { kind: 'compaction_failed'; reason: string };

/** Characters of a cut tool output still shown to the model (its beginning). */
const CUT_TOOL_HEAD = 300;

export function summaryDataOf(row: Pick<MessageRow, 'role'> & { data?: unknown }): SummaryData | undefined {
  const data = row.data as SummaryData | null;
  return row.role === 'summary' && (data?.kind === 'summary' || data?.kind === 'compaction_failed') ? data : undefined;
}

/**
 * The latest summary among `rows`, and the rows it does not cover (oldest first, notices left out):
 * `rows` itself when it holds no summary message at all (no copy a step of a long conversation).
 */
export function sinceSummary(rows: readonly MessageRow[]): { summary?: MessageRow; tail: readonly MessageRow[] } {
  let notices = false;
  for (let i = rows.length - 1; i >= 0; i -= 1) {
    if (rows[i].role !== 'summary') continue;
    notices = true;
    const data = summaryDataOf(rows[i]);
    if (data?.kind !== 'summary') continue;
    return { summary: rows[i], tail: rows.filter((r) => r.seq > data.through_seq && r.role !== 'summary') };
  }
  return { tail: notices ? rows.filter((r) => r.role !== 'summary') : rows };
}

/** How the model is given a stored summary: first in the history, saying what it is. */
export function summaryMessage(text: string): ChatMessage {
  return {
    role: 'user',
    content: `[Earlier turns of this conversation were summarised to fit the context window; this summary stands in for them.]\n\n${text}`,
  };
}

function cutOutput(content: string): string {
  if (content.length <= CUT_TOOL_HEAD * 2) return content;
  const { head, leftOut } = unitsCut(content, CUT_TOOL_HEAD);
  return `${head}\n[output cut to fit the context window: ${leftOut} more characters left out; run the tool again if you need them]`;
}

/**
 * Cuts old tool outputs, oldest first, until `messages` cost at most `budget`: the first thing to go,
 * since the model already acted on them. The outputs of the latest step (after the last non-tool
 * message) are kept whole: the model has not read them yet.
 */
export function cutToolOutputs(messages: readonly ChatMessage[], budget: number): ChatMessage[] {
  let used = messagesTokens(messages);
  if (used <= budget) return [...messages];
  let latestStep = messages.length;
  while (latestStep > 0 && messages[latestStep - 1].role === 'tool') latestStep -= 1;
  const out = [...messages];
  for (let i = 0; i < latestStep && used > budget; i += 1) {
    const m = out[i];
    if (m.role !== 'tool') continue;
    const cut = { ...m, content: cutOutput(m.content) };
    used -= estimateTokens(m) - estimateTokens(cut);
    out[i] = cut;
  }
  return out;
}

/** A row where the model's view may start: a user or assistant message, or the first call of a step. */
function startsStep(rows: readonly MessageRow[], i: number): boolean {
  const row = rows[i];
  if (row.role === 'user' || row.role === 'assistant') return true;
  const data = row.data as ToolCallData | null;
  if (row.role !== 'tool' || data?.kind !== 'call') return false;
  const before = i > 0 ? (rows[i - 1].data as ToolCallData | null) : null;
  return before?.kind !== 'call' || before.batch !== data.batch;
}

/** A stored row's rough cost (what its message, or its share of one, costs the model). */
export function rowTokens(row: MessageRow): number {
  return Math.ceil(row.content.length / 4) + 4;
}

/**
 * Where to split `rows` to summarise the older part: the newest rows worth about `keepTokens` are
 * kept as they are, starting at the beginning of a step (a tool result never without its call).
 * Returns the index of the first kept row; 0 when there is nothing older to summarise.
 */
export function splitForSummary(rows: readonly MessageRow[], keepTokens: number): number {
  let used = 0;
  let split = rows.length;
  for (let i = rows.length - 1; i >= 0; i -= 1) {
    used += rowTokens(rows[i]);
    if (used > keepTokens) break;
    split = i;
  }
  // Forward to the next turn's user message, else the next step's start; if the newest step alone is
  // bigger than keepTokens, the kept part starts there.
  let start = split;
  while (start < rows.length && rows[start].role !== 'user') start += 1;
  if (start >= rows.length) start = split;
  while (start < rows.length && !startsStep(rows, start)) start += 1;
  if (start >= rows.length) {
    start = rows.length - 1;
    while (start > 0 && !startsStep(rows, start)) start -= 1;
  }
  return Math.max(0, start);
}

/** Where the latest turn (its user message) starts among `rows`; 0 when there is none or only one. */
export function lastTurnStart(rows: readonly MessageRow[]): number {
  for (let i = rows.length - 1; i > 0; i -= 1) if (rows[i].role === 'user') return i;
  return 0;
}

/**
 * The last line of defence: the history within `budget` whatever happened before. The oldest messages
 * are dropped (fitHistory); a newest message too big on its own is cut to fit, with a note.
 */
export function fitToBudget(system: readonly ChatMessage[], history: readonly ChatMessage[], budget: number): { messages: ChatMessage[]; dropped: number } {
  const kept = fitHistory(undefined, [...history], budget);
  const dropped = history.length - kept.length;
  const last = kept.at(-1);
  if (last && messagesTokens(kept) > budget && last.role !== 'assistant') {
    const room = Math.max(0, (budget - 64) * 4);
    const { head, leftOut } = unitsCut(last.content, room);
    // Over the budget by its attachments alone, its text fits whole: no note that says otherwise (review23a).
    if (leftOut > 0) kept[kept.length - 1] = { ...last, content: `${head}\n[cut to fit the context window: ${leftOut} characters left out]` };
  }
  return { messages: [...system, ...kept], dropped };
}
