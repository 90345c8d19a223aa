import type { MessageRow } from '../store';
import { estimateTokens } from './history';
import { readableMessage } from './prompt/environment';
import type { ChatMessage } from './providers/types';
import { indexOf, transcriptOf, type ModelToolNames } from './transcript';

/**
 * How the request names and escapes each message of the history: tools by their model names; with the
 * turn's note (`readable`), every user message's forged note escaped (prompt/environment.ts).
 */
export interface Shaping {
  names: ModelToolNames;
  readable: boolean;
}

/** One history message as the request carries it (see Shaping). */
export function shaped(m: ChatMessage, shaping: Shaping): ChatMessage {
  return modelNamed(shaping.readable ? readableMessage(m) : m, shaping.names);
}

/**
 * The request's messages in one pass over the history: each shaped (Shaping: `readable` when there is a
 * note), the turn's note last.
 */
export function requestMessages(messages: readonly ChatMessage[], moment: ChatMessage | undefined, names: ModelToolNames): ChatMessage[] {
  // Made at its length: a long history's array grown message by message was ~2.5x its size in garbage a step.
  const out = new Array<ChatMessage>(messages.length + (moment ? 1 : 0));
  const shaping = { names, readable: moment !== undefined };
  for (let i = 0; i < messages.length; i += 1) out[i] = shaped(messages[i], shaping);
  if (moment) out[messages.length] = moment;
  return out;
}

function modelNamed(m: ChatMessage, names: ModelToolNames): ChatMessage {
  if (m.role === 'assistant' && m.tool_calls) return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, name: names.modelName(c.name) })) };
  if (m.role === 'tool') return { ...m, name: names.modelName(m.name) };
  return m;
}

/**
 * A conversation's history as the last request carried it, kept to be extended. Rows, messages and
 * parts are numbered from the conversation's view's start (ordinals): row ordinal `o` is `rows[o - base]`;
 * a part is the rows from one user message (or the window's first row) to the next, and its messages
 * (transcriptOf of those rows alone: the same whatever comes before or after, transcript.ts).
 * `partRow[k]`, `partMessage[k]`: where part `head + k` begins; `tokensAt`, `attachedAt`, `summariesAt`:
 * the sums before it (the unshaped messages' estimated tokens, the user messages with attachments, the
 * `summary` rows). The arrays are cut from the front (`head`) and compacted once half of them is cut;
 * the rows before the first part, when the window slid into one, are the `front`.
 */
interface View {
  shaping: Shaping;
  /** The rows it was made of (the caller's own array, as given: never changed by anyone). */
  rows: readonly MessageRow[];
  base: number;
  /** The shaped messages, from `messageHead` (its ordinal `messageBase + messageHead`). */
  messages: (ChatMessage | undefined)[];
  messageHead: number;
  messageBase: number;
  partRow: number[];
  partMessage: number[];
  tokensAt: number[];
  attachedAt: number[];
  summariesAt: number[];
  head: number;
  /** The sums after the last part. */
  tokens: number;
  attached: number;
  summaries: number;
  /** The rows before the first part (the window slid into a part; no user message among them): their messages, before the parts'. */
  front: LoosePart | undefined;
}

/** How many conversations' views are kept (the most recently used). */
const VIEWS = 8;

/**
 * Each conversation's history as its last request carried it (shaped, see Shaping), extended by the rows
 * stored since instead of made again: a step of a long conversation shaped, checked for attachments and
 * transcribed its whole window (500 rows) for one or two new rows.
 *
 * A view is used only when the rows it was made of are the very objects of the new window where they
 * overlap (every one compared, an array of pointers: the history cache gives a changed, re-read or cut
 * row as a new object, so any write that changed earlier rows, a retention cut, a delete, an eviction
 * makes the view be made again), and only with the same Shaping (a tool list or a note that changed).
 * Whether it may be sent as it is (no summary in the window, no attachment, within the budget) the
 * caller decides by `fits`; otherwise the request is built the long way, as before.
 */
export class RequestViews {
  private readonly views = new Map<string, View>();
  /** Whether a conversation's view may be kept: its rows held by the history cache too (no more memory than it counts). */
  private readonly kept: (conversationId: string) => boolean;
  private readonly appendOnly: boolean;

  /**
   * `appendOnly`: the caller's word that, until it calls `forget` for a conversation, the rows it gives are
   * the rows it gave before (the very objects), cut from the front and added to at the end, and nothing
   * else (the history cache's: a re-read, a cut or an eviction makes it forget, agent.ts). The overlap is
   * then checked at its two ends only, not row by row (a 500-row window compared at every step).
   */
  constructor(options: { kept?: (conversationId: string) => boolean; appendOnly?: boolean } = {}) {
    this.kept = options.kept ?? (() => true);
    this.appendOnly = options.appendOnly === true;
  }

  /** Lets go of a conversation's view (deleted, or no longer held by the history cache). */
  forget(conversationId: string): void {
    this.views.delete(conversationId);
  }

  /**
   * The request's messages for `rows` (the conversation's window, oldest first) after `lead` and with
   * `note` last, when the history may be sent whole as it is: no `summary` row in the window (the
   * compactor's view then starts at the summary), no attachment (the model's input is made of their
   * blobs) and at most `budget` estimated tokens (else the compactor cuts). Otherwise undefined: the
   * caller builds the request the long way. The conversation's view is kept (or made) either way.
   */
  request(rows: readonly MessageRow[], lead: ChatMessage | undefined, note: ChatMessage | undefined, shaping: Shaping, budget: number): ChatMessage[] | undefined {
    if (rows.length === 0) return undefined;
    const key = rows[0].conversation_id;
    const last = this.views.get(key);
    this.views.delete(key);
    const view = (last && extended(last, rows, shaping, this.appendOnly)) ?? made(rows, shaping);
    if (this.kept(key)) {
      this.views.set(key, view);
      for (const [id] of this.views) {
        if (this.views.size <= VIEWS) break;
        this.views.delete(id);
      }
    }
    const { head, front } = view;
    const summaries = (front?.summaries ?? 0) + view.summaries - view.summariesAt[head];
    const attached = (front?.attached ?? 0) + view.attached - view.attachedAt[head];
    const tokens = (front?.tokens ?? 0) + view.tokens - view.tokensAt[head];
    if (summaries > 0 || attached > 0 || tokens > budget) return undefined;
    const count = (front?.messages.length ?? 0) + view.messages.length - view.messageHead;
    const out = new Array<ChatMessage>((lead ? 1 : 0) + count + (note ? 1 : 0));
    let at = 0;
    if (lead) out[at++] = lead;
    if (front) for (const message of front.messages) out[at++] = message;
    for (let i = view.messageHead; i < view.messages.length; i += 1) out[at++] = view.messages[i]!;
    if (note) out[at] = note;
    return out;
  }
}

/** A new view of `rows`, every part made. */
function made(rows: readonly MessageRow[], shaping: Shaping): View {
  const view: View = {
    shaping,
    rows,
    base: 0,
    messages: [],
    messageHead: 0,
    messageBase: 0,
    partRow: [],
    partMessage: [],
    tokensAt: [],
    attachedAt: [],
    summariesAt: [],
    head: 0,
    tokens: 0,
    attached: 0,
    summaries: 0,
    front: undefined,
  };
  addParts(view, rows, 0);
  return view;
}

/**
 * `last` extended to `rows`, or undefined when it cannot be: another shaping, or `rows` not `last.rows`
 * slid on (cut from the front) and grown (rows added at the end), every overlapping row the same object
 * (`appendOnly`: the caller vouches for the rows between the overlap's ends; RequestViews).
 * The parts cut into at the front and the last part (rows may have been added to it) are made again.
 */
function extended(last: View, rows: readonly MessageRow[], shaping: Shaping, appendOnly: boolean): View | undefined {
  if (last.shaping.names !== shaping.names || last.shaping.readable !== shaping.readable) return undefined;
  const old = last.rows;
  const shift = indexOf(old, rows[0]);
  if (shift < 0) return undefined;
  // Fewer rows than before from there (rows[i - shift] undefined) fail this too.
  if (appendOnly) {
    if (old[old.length - 1] !== rows[old.length - 1 - shift]) return undefined;
  } else for (let i = shift; i < old.length; i += 1) if (old[i] !== rows[i - shift]) return undefined;
  const view = last;
  const parts = view.partRow.length;
  // The first kept part: the first beginning at or after rows[0] (its ordinal `start`).
  const start = view.base + shift;
  let first = view.head;
  while (first < parts && view.partRow[first] < start) first += 1;
  // The last part is made again with what was added to it, and so is the front cut into: at least one whole part must stay between.
  if (first >= parts - 1) return undefined;
  const end = view.partRow[parts - 1];
  const grown = rows.length > old.length - shift;
  const keepTo = grown ? parts - 1 : parts;
  // The rows before that part (the end of one cut into, no user message among them): made again.
  const front = view.partRow[first] - start;
  const frontParts = front > 0 ? partsOf(rows, 0, front, shaping) : [];
  if (frontParts.length > 1) return undefined;
  // Cut the parts before `first`, and the messages before its own; the rows' ordinals now count from rows[0].
  dropFront(view, first);
  view.base = start;
  view.rows = rows;
  view.front = frontParts[0];
  if (keepTo < parts) {
    // Undo the last part (its messages and sums), then make it again with the rows added.
    const k = view.partRow.length - 1;
    view.messages.length = view.partMessage[k] - view.messageBase;
    view.tokens = view.tokensAt[k];
    view.attached = view.attachedAt[k];
    view.summaries = view.summariesAt[k];
    view.partRow.length = k;
    view.partMessage.length = k;
    view.tokensAt.length = k;
    view.attachedAt.length = k;
    view.summariesAt.length = k;
    addParts(view, rows, end - view.base);
  }
  return view;
}

/** A part as made from rows (`row`: the index of its first): its messages, shaped, and its sums. */
interface LoosePart {
  row: number;
  messages: ChatMessage[];
  tokens: number;
  attached: number;
  summaries: number;
}

/** The parts of `rows[from..to)`, each transcribed and shaped. */
function partsOf(rows: readonly MessageRow[], from: number, to: number, shaping: Shaping): LoosePart[] {
  const out: LoosePart[] = [];
  let start = from;
  while (start < to) {
    let stop = start + 1;
    while (stop < to && rows[stop].role !== 'user') stop += 1;
    const part = rows.slice(start, stop);
    let summaries = 0;
    for (const row of part) if (row.role === 'summary') summaries += 1;
    const messages: ChatMessage[] = [];
    let tokens = 0;
    let attached = 0;
    for (const message of transcriptOf(part)) {
      tokens += estimateTokens(message);
      if (message.role === 'user' && (message.attachments?.length ?? 0) > 0) attached += 1;
      messages.push(shaped(message, shaping));
    }
    out.push({ row: start, messages, tokens, attached, summaries });
    start = stop;
  }
  return out;
}

/** Appends the parts of `rows[from..]` to the view. */
function addParts(view: View, rows: readonly MessageRow[], from: number): void {
  for (const part of partsOf(rows, from, rows.length, view.shaping)) {
    view.partRow.push(view.base + part.row);
    view.partMessage.push(view.messageBase + view.messages.length);
    view.tokensAt.push(view.tokens);
    view.attachedAt.push(view.attached);
    view.summariesAt.push(view.summaries);
    for (const message of part.messages) view.messages.push(message);
    view.tokens += part.tokens;
    view.attached += part.attached;
    view.summaries += part.summaries;
  }
}

/** Cuts the view's parts before `first` and their messages (compacting the arrays once half is cut). */
function dropFront(view: View, first: number): void {
  const messageHead = view.partMessage[first] - view.messageBase;
  for (let i = view.messageHead; i < messageHead; i += 1) view.messages[i] = undefined;
  view.messageHead = messageHead;
  view.head = first;
  if (view.head * 2 >= view.partRow.length) {
    view.partRow = view.partRow.slice(view.head);
    view.partMessage = view.partMessage.slice(view.head);
    view.tokensAt = view.tokensAt.slice(view.head);
    view.attachedAt = view.attachedAt.slice(view.head);
    view.summariesAt = view.summariesAt.slice(view.head);
    view.head = 0;
  }
  if (view.messageHead * 2 >= view.messages.length) {
    view.messages = view.messages.slice(view.messageHead);
    view.messageBase += view.messageHead;
    view.messageHead = 0;
  }
}
