import type { ToolResultDetail } from '../protocol';
import type { MessageRow } from '../store';
import { contextOf, withContext } from './chat-context';
import type { ChatMessage, ToolCall } from './providers/types';
import { storedAttachmentsOf, type StoredAttachment } from './attachments/content';
import { estimateTokens } from './history';

/**
 * How tool traffic is kept in the `messages` table (role `tool`), so a conversation can be replayed to a model.
 * `text`: what the model wrote before the calls, on the batch's first call in conversations stored before
 * that text became an assistant message of its own (stored just before the calls).
 */
export type ToolCallData = { kind: 'call'; call_id: string; batch: string; arguments: Record<string, unknown>; text?: string };
/** `detail`: what the call did, for people (get_messages shows it; the model is sent `content` only). */
export type ToolResultData = { kind: 'result'; call_id: string; ok: boolean; denied?: boolean; attachments?: StoredAttachment[]; detail?: ToolResultDetail };

const INTERRUPTED = 'The tool call was interrupted before it returned a result.';

/**
 * Rebuilds the model's view of a conversation from stored rows: consecutive tool-call rows of one
 * batch become one assistant message with tool_calls; a call without a stored result (the process
 * died in between) gets an "interrupted" result so the history stays valid for every provider.
 */
export function transcriptOf(rows: readonly MessageRow[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let open: { batch: string; message: Extract<ChatMessage, { role: 'assistant' }>; unanswered: Map<string, string> } | undefined;
  const closeBatch = () => {
    if (!open) return;
    for (const [callId, name] of open.unanswered) messages.push({ role: 'tool', tool_call_id: callId, name, content: INTERRUPTED });
    open = undefined;
  };
  let previous: MessageRow | undefined;
  for (const row of rows) {
    const data = row.data as ToolCallData | ToolResultData | null;
    const before = previous;
    previous = row;
    if (row.role === 'tool' && data?.kind === 'call') {
      if (open?.batch !== data.batch) {
        closeBatch();
        // The assistant message stored just before the batch is the text the model wrote with these calls.
        const said = before?.role === 'assistant' ? messages.pop() : undefined;
        const message: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant', content: said?.content ?? data.text ?? '', tool_calls: [] };
        messages.push(message);
        open = { batch: data.batch, message, unanswered: new Map() };
      }
      const call: ToolCall = { id: data.call_id, name: row.tool_name ?? 'unknown', arguments: data.arguments };
      open!.message.tool_calls!.push(call);
      open!.unanswered.set(call.id, call.name);
      continue;
    }
    if (row.role === 'tool' && data?.kind === 'result') {
      if (!open?.unanswered.delete(data.call_id)) continue;
      messages.push({ role: 'tool', tool_call_id: data.call_id, name: row.tool_name ?? 'unknown', content: row.content });
      continue;
    }
    closeBatch();
    if (row.role === 'assistant') messages.push({ role: 'assistant', content: row.content });
    if (row.role === 'user') {
      const content = withContext(row.content, contextOf(row.data));
      const attachments = storedAttachmentsOf(row.data);
      messages.push(attachments.length > 0 ? { role: 'user', content, attachments } : { role: 'user', content });
    }
  }
  closeBatch();
  return messages;
}

/** One part of a transcript: rows from a user message (or the window's first row) to the next user message, and their messages. */
interface Part {
  rows: readonly MessageRow[];
  messages: readonly ChatMessage[];
}

/**
 * A call's transcript as the next call compares with it: its rows and messages (copies of its own), and
 * where each part begins in both (`rowAt[k]`, `messageAt[k]`, `parts` of them); `tokensAt[k]`: the
 * messages' estimated tokens before part k, `tokens` in all.
 */
interface Flat {
  rows: (MessageRow | undefined)[];
  messages: (ChatMessage | undefined)[];
  rowAt: number[];
  messageAt: number[];
  tokensAt: number[];
  tokens: number;
  parts: number;
}

const emptyFlat = (): Flat => ({ rows: [], messages: [], rowAt: [], messageAt: [], tokensAt: [], tokens: 0, parts: 0 });
/** A conversation's when it has none kept. */
const NO_FLAT: Flat = emptyFlat();

/**
 * The last calls kept flat are those of the last FLATS conversations, within FLATS_MAX_TOKENS estimated
 * tokens in all (about 16 MB of text): a call over it is not kept, since its rows would stay in memory
 * between turns for a conversation too big for the history cache to keep.
 */
const FLATS = 8;
const FLATS_MAX_TOKENS = 4_000_000;

/** Lets go of what `flat` holds, keeping its arrays' room. */
function emptied(flat: Flat): void {
  flat.rows.fill(undefined);
  flat.messages.fill(undefined);
  flat.parts = 0;
  flat.tokens = 0;
}

/**
 * transcriptOf, each turn's part kept: the rows from one user message to the next give the same
 * messages whatever comes before or after them (a user message closes any open batch), so parts whose
 * rows are the same objects as last time (the history cache keeps them) are not rebuilt. Each step of a
 * long conversation rebuilt hundreds of messages, and each user message's attached context, for one new
 * row. The messages are shared between calls: nobody may change them (they are copied where changed).
 * Each conversation's last call is kept flat (its rows, its messages, where its parts begin; the last
 * FLATS conversations'): a call whose rows agree with it over a run (the window slid on, rows were added at its end) takes that run's parts' messages
 * with a comparison of the two row arrays and one copy, reading no row or part; the rows outside the
 * run are split into parts, each looked up by its first row (another conversation's, an earlier
 * window's), or made.
 */
export class Transcripts {
  /** By a part's first row (its rows compared one by one). */
  private readonly parts = new WeakMap<MessageRow, Part>();
  /** The last call of each conversation, by its id, the most recent last. */
  private readonly flats = new Map<string, Flat>();
  /** Their estimated tokens in all. */
  private flatTokens = 0;
  /** The one the next call fills (the last call's then takes its place: arrays reused, not grown each step). */
  private spare: Flat = emptyFlat();
  /** The parts a call makes or looks up outside the run it takes from the last call (reused). */
  private readonly made: Part[] = [];
  /** Whether a conversation's last call may be kept flat: its rows held by the history cache too (no more memory than it counts). */
  private readonly kept: (conversationId: string) => boolean;

  constructor(options: { kept?: (conversationId: string) => boolean } = {}) {
    this.kept = options.kept ?? (() => true);
  }

  /** Lets go of a conversation's last call (deleted, or no longer held by the history cache). */
  forget(conversationId: string): void {
    const flat = this.flats.get(conversationId);
    if (!flat) return;
    this.flats.delete(conversationId);
    this.flatTokens -= flat.tokens;
    emptied(flat);
  }

  /**
   * transcriptOf(rows), after `lead` (the system messages: the request's messages in one array, made at
   * its length, instead of an array grown message by message and then copied behind the system's).
   */
  of(rows: readonly MessageRow[], lead: readonly ChatMessage[] = []): ChatMessage[] {
    return this.counted(rows, lead).messages;
  }

  /**
   * `of`, with what its transcript costs (messagesTokens of the messages after `lead`): summed as the call
   * is made, most of it from the last call's parts, so the model view does not count the window again.
   */
  counted(rows: readonly MessageRow[], lead: readonly ChatMessage[] = []): { messages: ChatMessage[]; tokens: number } {
    const key = rows.length > 0 ? rows[0].conversation_id : '';
    const last = this.flats.get(key) ?? NO_FLAT;
    // The run of rows the last call had too: rows[from..to) are last.rows[shift + from..shift + to), whole parts of it.
    const run = agreeing(last, rows);
    const made = this.made;
    // A call that threw left its parts here: they are not this call's.
    made.length = 0;
    let count = 0;
    const split = (start: number, end: number): void => {
      while (start < end) {
        let stop = start + 1;
        while (stop < end && rows[stop].role !== 'user') stop += 1;
        const part = this.partOf(rows, start, stop);
        made.push(part);
        count += part.messages.length;
        start = stop;
      }
    };
    split(0, run.from);
    const before = made.length;
    const taken = run.to === run.from ? 0 : run.lastPart + 1 < last.parts ? last.messageAt[run.lastPart + 1] : last.messages.length;
    const takenFrom = run.to > run.from ? last.messageAt[run.firstPart] : 0;
    count += taken - takenFrom;
    split(run.to, rows.length);

    // The request's messages, and this call kept flat for the next.
    const next = this.spare;
    const out = new Array<ChatMessage>(lead.length + count);
    let at = 0;
    for (const message of lead) out[at++] = message;
    let rowAt = 0;
    let parts = 0;
    let own = 0;
    let tokens = 0;
    const keep = (part: Part): void => {
      next.rowAt[parts] = rowAt;
      next.messageAt[parts] = own;
      next.tokensAt[parts++] = tokens;
      rowAt += part.rows.length;
      for (const message of part.messages) {
        out[at++] = message;
        next.messages[own++] = message;
        tokens += estimateTokens(message);
      }
    };
    for (let i = 0; i < before; i += 1) keep(made[i]);
    if (run.to > run.from) {
      const tokensFrom = last.tokensAt[run.firstPart];
      for (let k = run.firstPart; k <= run.lastPart; k += 1) {
        next.rowAt[parts] = last.rowAt[k] - run.shift;
        next.messageAt[parts] = last.messageAt[k] - takenFrom + own;
        next.tokensAt[parts++] = last.tokensAt[k] - tokensFrom + tokens;
      }
      for (let i = takenFrom; i < taken; i += 1) {
        const message = last.messages[i]!;
        out[at++] = message;
        next.messages[own++] = message;
      }
      tokens += (run.lastPart + 1 < last.parts ? last.tokensAt[run.lastPart + 1] : last.tokens) - tokensFrom;
      rowAt = run.to;
    }
    for (let i = before; i < made.length; i += 1) keep(made[i]);
    for (let i = 0; i < rows.length; i += 1) next.rows[i] = rows[i];
    next.rows.length = rows.length;
    next.messages.length = own;
    next.parts = parts;
    next.tokens = tokens;
    made.length = 0;
    // The call before lets go of its rows; this one is kept, within the bounds (least recently used out first).
    if (last !== NO_FLAT) {
      this.flats.delete(key);
      this.flatTokens -= last.tokens;
      emptied(last);
    }
    if (!this.kept(key)) {
      emptied(next);
      return { messages: out, tokens };
    }
    this.flats.set(key, next);
    this.flatTokens += tokens;
    this.spare = last === NO_FLAT ? emptyFlat() : last;
    for (const [id, flat] of this.flats) {
      if (this.flats.size <= FLATS && this.flatTokens <= FLATS_MAX_TOKENS) break;
      this.flats.delete(id);
      this.flatTokens -= flat.tokens;
      emptied(flat);
      this.spare = flat;
    }
    return { messages: out, tokens };
  }

  /** The part of `rows[start..end)`: looked up by its first row, else made. */
  private partOf(rows: readonly MessageRow[], start: number, end: number): Part {
    const first = rows[start];
    const kept = this.parts.get(first);
    if (kept && sameRows(kept.rows, rows, start, end)) return kept;
    const part = rows.slice(start, end);
    const made = { rows: part, messages: transcriptOf(part) };
    this.parts.set(first, made);
    return made;
  }
}

/**
 * The run of `rows` that `last` had too, in whole parts of it: `rows[from..to)` are
 * `last.rows[shift + from..shift + to)`, which are its parts `firstPart..lastPart`; from = to: none.
 */
function agreeing(last: Flat, rows: readonly MessageRow[]): { from: number; to: number; shift: number; firstPart: number; lastPart: number } {
  const none = { from: 0, to: 0, shift: 0, firstPart: 0, lastPart: -1 };
  if (rows.length === 0 || last.parts === 0) return none;
  // Where rows[0] is in the last call's rows (their seqs grow): the window slid on by `shift`.
  const shift = indexOf(last.rows as MessageRow[], rows[0]);
  if (shift < 0) return none;
  let agree = 0;
  const most = Math.min(rows.length, last.rows.length - shift);
  while (agree < most && rows[agree] === last.rows[shift + agree]) agree += 1;
  // Its first part beginning at or after rows[0] (every part but the first begins at a user message, as in `rows`).
  let firstPart = 0;
  while (firstPart < last.parts && last.rowAt[firstPart] < shift) firstPart += 1;
  // Its last part ending within the run where `rows` begin a part too (a user message, or their end).
  let lastPart = firstPart - 1;
  for (let k = firstPart; k < last.parts; k += 1) {
    const end = (k + 1 < last.parts ? last.rowAt[k + 1] : last.rows.length) - shift;
    if (end > agree) break;
    if (end === agree && end < rows.length && rows[end].role !== 'user') break;
    lastPart = k;
  }
  if (lastPart < firstPart) return none;
  const from = last.rowAt[firstPart] - shift;
  const to = (lastPart + 1 < last.parts ? last.rowAt[lastPart + 1] : last.rows.length) - shift;
  return { from, to, shift, firstPart, lastPart };
}

/** The index of `row` in `rows` (ordered by seq), or -1. */
export function indexOf(rows: readonly MessageRow[], row: MessageRow): number {
  let low = 0;
  let high = rows.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const seq = rows[mid].seq;
    if (seq === row.seq) return rows[mid] === row ? mid : -1;
    if (seq < row.seq) low = mid + 1;
    else high = mid - 1;
  }
  return -1;
}

/** Whether `kept` are the very rows `rows[start..end)`. */
function sameRows(kept: readonly MessageRow[], rows: readonly MessageRow[], start: number, end: number): boolean {
  if (kept.length !== end - start) return false;
  for (let i = 0; i < kept.length; i += 1) if (kept[i] !== rows[start + i]) return false;
  return true;
}

/**
 * Tool names as the model sees them: providers accept `^[a-zA-Z0-9_-]{1,64}$`, while MCP tools are
 * named `<server>.<tool>`. Maps both ways, keeping distinct tools distinct.
 */
export class ModelToolNames {
  private readonly toModel = new Map<string, string>();
  private readonly fromModel = new Map<string, string>();

  constructor(names: readonly string[]) {
    for (const name of names) {
      const base = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 60) || 'tool';
      let candidate = base;
      for (let n = 2; this.fromModel.has(candidate); n += 1) candidate = `${base}_${n}`;
      this.toModel.set(name, candidate);
      this.fromModel.set(candidate, name);
    }
  }

  modelName(name: string): string {
    return this.toModel.get(name) ?? name;
  }

  toolName(modelName: string): string | undefined {
    return this.fromModel.get(modelName);
  }
}
