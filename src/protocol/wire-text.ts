import type { Envelope } from './envelope';

/** How many results of one run keptForTheRun keeps at most. */
const KEPT_A_RUN = 256;

/**
 * A frame's JSON text. An event sent to many clients (a conversation's followers, a broadcast) is the
 * same object for each socket, handed to them one after the other in one synchronous run: the text of
 * the last frames serialized is kept until that run ends, so the event is serialized once, not once
 * per socket. Frames are never changed after they are sent, so the text stays true.
 *
 * Not a WeakMap of every frame: most frames go to one socket (every reply, a sender's own pieces), and
 * a WeakMap entry per frame cost more than the serialization itself (each entry an ephemeron the
 * garbage collector must trace: `npm run bench -- ws`, issue 25).
 */
export const wireText: (frame: object) => string = keptForTheRun((frame: object) => JSON.stringify(frame));

/**
 * `make`, its results kept for the synchronous run it is called in (keyed by identity) and dropped at
 * its end, so a large value is not held after it was sent: what a fan-out makes once for every socket
 * (wireText here, a WebSocket frame in transport/connections/ws-frames.ts). A conversation's followers
 * are each sent every event of the run in turn (a provider's read of several pieces, the sender's own
 * copies in between): every result of the run is kept, not the last two only, which made each follower's
 * texts and frames again once a run held three (or two and the sender's). The first two in slots (most
 * runs make one or two); up to `most` in all, beyond which a result is made each time (a catch-up's
 * thousand events go to one socket: nothing to share).
 */
export function keptForTheRun<K, V>(make: (key: K) => V, most = KEPT_A_RUN): (key: K) => V {
  const SLOTS = 2;
  const keys: (K | undefined)[] = new Array<K | undefined>(SLOTS).fill(undefined);
  const values: (V | undefined)[] = new Array<V | undefined>(SLOTS).fill(undefined);
  let more: Map<K, V> | undefined;
  let count = 0;
  const clear = () => {
    keys.fill(undefined);
    values.fill(undefined);
    more = undefined;
    count = 0;
  };
  return (key) => {
    for (let i = 0; i < SLOTS; i += 1) if (keys[i] === key && i < count) return values[i]!;
    const kept = more?.get(key);
    if (kept !== undefined) return kept;
    const value = make(key);
    if (count === 0) queueMicrotask(clear);
    if (count < SLOTS) {
      keys[count] = key;
      values[count] = value;
    } else if (count < most) (more ??= new Map()).set(key, value);
    count += 1;
    return value;
  };
}

/**
 * Results that many answers share while nothing in them changes (get_config's, asked by every client at
 * start and polled by scripts): their text, made once and kept as long as the result lives (a WeakMap
 * entry for these few objects only; see above for why not for every frame). `bare` is the whole answer
 * without an id, the same string each time: a transport may keep what it made of it (its frame,
 * transport/connections/ws-frames.ts) while the same text comes again.
 */
const sharedTexts = new WeakMap<object, { data: string; bare: string }>();

/** Marks a result as shared: it is never changed after this (its text is made now). */
export function sharedResult<T extends object>(result: T): Readonly<T> {
  const data = JSON.stringify(result);
  sharedTexts.set(result, { data, bare: `{"status":"ok","data":${data}}` });
  return result;
}

/**
 * Results whose JSON text was made while they were built (an export's piece: its text is serialized to
 * measure its frame, a megabyte that need not be serialized again): used once, by the answer that carries
 * it, and never kept by a transport (unlike a shared result's).
 */
const madeTexts = new WeakMap<object, string>();

/**
 * `result` whose JSON text is `data`: the caller made `data` so that it equals JSON.stringify(result)
 * (test/protocol/wire-text.test.ts checks the export's), and changes neither after this.
 */
export function withDataText<T extends object>(result: T, data: string): T {
  madeTexts.set(result, data);
  return result;
}

/**
 * JSON.stringify(result) made with one string field's JSON text given already (`fieldJson`, that of
 * `result[field]`), without serializing that field again: `result` is serialized with the field empty
 * and the given text put in its place. The field must be a string.
 */
export function jsonWithField<T extends object>(result: T, field: keyof T & string, fieldJson: string): string {
  const empty = JSON.stringify({ ...result, [field]: '' });
  // A key is a JSON string followed by a colon, which no string value can be: the first `"field":""`
  // followed by a comma or the closing brace is the field itself.
  const marker = `${JSON.stringify(field)}:""`;
  const at = empty.indexOf(marker);
  if (at < 0) throw new Error(`jsonWithField: ${field} is not in the result`);
  return `${empty.slice(0, at + marker.length - 2)}${fieldJson}${empty.slice(at + marker.length)}`;
}

/** The last shared answer without an id that envelopeText gave (see isSharedAnswerText). */
let lastBareText: string | undefined;

/** An answer's JSON text, the same as JSON.stringify's: a shared result's text is not made again. */
export function envelopeText(envelope: Envelope): string {
  if (envelope.status !== 'ok') return JSON.stringify(envelope);
  const shared = sharedTexts.get(envelope.data);
  if (shared === undefined) {
    const made = madeTexts.get(envelope.data);
    if (made === undefined) return JSON.stringify(envelope);
    return `{"status":"ok","data":${made}${envelope.id !== undefined ? `,"id":${JSON.stringify(envelope.id)}` : ''}}`;
  }
  if (envelope.id !== undefined) return `{"status":"ok","data":${shared.data},"id":${JSON.stringify(envelope.id)}}`;
  lastBareText = shared.bare;
  return shared.bare;
}

/**
 * Whether a text is the last shared answer without an id: the only reply a transport may keep what it
 * made of (a shared result holds no secret; any other reply may, a pairing's device token say, and is
 * not kept past its sending).
 */
export function isSharedAnswerText(text: string): boolean {
  return text === lastBareText;
}
