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
 * A JSON text in parts, a large one already as UTF-8 bytes (an export's piece), and its UTF-8 length in
 * all, measured as it was made: a transport that writes bytes puts the parts into its frame one after the
 * other (transport/connections/ws-frames.ts `measuredFrame`: the bytes copied as they are) instead of
 * joining them into one string (whose flattening copied an export's megabyte piece), measuring and
 * encoding that again.
 */
export interface MeasuredText {
  readonly parts: readonly (string | Uint8Array)[];
  readonly bytes: number;
}

/**
 * Bytes made with free room before and after them in a buffer of their own (an export's piece, its JSON
 * written into the middle of a larger buffer): the frame of a text they are part of may be written
 * around them in place (transport/connections/ws-frames.ts `measuredFrame`) instead of copying them into
 * a new megabyte. Once only: that frame then owns the room, and may still wait in its socket's queue
 * when the same bytes are framed again (that frame is a copy).
 */
const withRoom = new WeakSet<Uint8Array>();

/** `room[start, end)`, which owns the rest of `room` as its room (a buffer no other bytes share: not from Buffer's pool). */
export function bytesWithRoom<B extends Uint8Array>(room: B, start: number, end: number): B {
  const bytes = room.subarray(start, end) as B;
  withRoom.add(bytes);
  return bytes;
}

/** Whether `bytes` own the room around them in their ArrayBuffer (bytesWithRoom), which the caller takes: true once. */
export function takeRoom(bytes: Uint8Array): boolean {
  return withRoom.delete(bytes);
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** UTF-8 length of a short text (what is around a measured part: a result's other fields, an id). */
function shortTextBytes(text: string): number {
  return utf8.encode(text).length;
}

/**
 * Results whose JSON text was made before their answer (a WeakMap entry for these few objects only; see
 * above for why not for every frame): shared ones, which many answers share while nothing in them changes
 * (get_config's, asked by every client at start and polled by scripts), and an export's piece
 * (withDataText, in measured parts). `bare`, a shared result's only, is the whole answer without an id,
 * the same string each time: a transport may keep what it made of it (its frame,
 * transport/connections/ws-frames.ts) while the same text comes again.
 */
const madeTexts = new WeakMap<object, { data: string; bare?: string } | { data: MeasuredText; bare?: undefined }>();

/** Marks a result as shared: it is never changed after this (its text is made now). */
export function sharedResult<T extends object>(result: T): Readonly<T> {
  const data = JSON.stringify(result);
  madeTexts.set(result, { data, bare: `${ENVELOPE_HEAD}${data}}` });
  return result;
}

/**
 * `result` whose JSON text `data` was made while it was built (an export's piece: its text is serialized
 * and encoded to measure its frame, a megabyte that need not be made again): the caller made
 * `data`'s parts join to JSON.stringify(result) and changes neither after this
 * (test/service/rendered-exports.test.ts checks the export's). Unlike a shared result's, its answer is
 * never kept by a transport.
 */
export function withDataText<T extends object>(result: T, data: MeasuredText): T {
  madeTexts.set(result, { data });
  return result;
}

/**
 * JSON.stringify(result) in measured parts, with one string field's JSON text given already as UTF-8
 * (`fieldJson`, that of `result[field]`), without serializing, measuring or encoding that field again:
 * `result` is serialized with the field empty and the given bytes put in its place. The field must be a
 * string.
 */
export function jsonWithField<T extends object>(result: T, field: keyof T & string, fieldJson: Uint8Array): MeasuredText {
  const empty = JSON.stringify({ ...result, [field]: '' });
  // A key is a JSON string followed by a colon, which no string value can contain unescaped: the only
  // `"field":""` in the text is the field itself.
  const marker = `${JSON.stringify(field)}:""`;
  const at = empty.indexOf(marker);
  if (at < 0) throw new Error(`jsonWithField: ${field} is not in the result`);
  const before = empty.slice(0, at + marker.length - 2);
  const after = empty.slice(at + marker.length);
  return { parts: [before, fieldJson, after], bytes: shortTextBytes(before) + fieldJson.length + shortTextBytes(after) };
}

/** The last shared answer without an id that envelopeText gave (see isSharedAnswerText). */
let lastBareText: string | undefined;

/** An answer's JSON text, the same as JSON.stringify's: a result's text made already is not made again. */
export function envelopeText(envelope: Envelope): string {
  return textOf(envelopeWire(envelope));
}

/**
 * An answer's JSON text as a transport takes it: in measured parts when its result's text was made so
 * (withDataText: an export's piece; a transport that writes bytes frames the parts, another joins them,
 * textOf), otherwise the text itself, the same as JSON.stringify's (a result's text made already is not
 * made again).
 */
export function envelopeWire(envelope: Envelope): string | MeasuredText {
  const made = envelope.status === 'ok' ? madeTexts.get(envelope.data) : undefined;
  if (made === undefined) return JSON.stringify(envelope);
  if (typeof made.data !== 'string') {
    const tail = envelope.id === undefined ? '}' : `,"id":${JSON.stringify(envelope.id)}}`;
    return { parts: [ENVELOPE_HEAD, ...made.data.parts, tail], bytes: ENVELOPE_HEAD.length + made.data.bytes + shortTextBytes(tail) };
  }
  if (envelope.id !== undefined) return `${ENVELOPE_HEAD}${made.data},"id":${JSON.stringify(envelope.id)}}`;
  if (made.bare === undefined) return `${ENVELOPE_HEAD}${made.data}}`;
  lastBareText = made.bare;
  return made.bare;
}

/** What an answer's JSON text starts with before its result's (ASCII). */
const ENVELOPE_HEAD = '{"status":"ok","data":';

/** A text in measured parts as one string (for a transport that takes strings: a relayed client's). */
export function textOf(text: string | MeasuredText): string {
  return typeof text === 'string' ? text : text.parts.map((part) => (typeof part === 'string' ? part : fromUtf8.decode(part))).join('');
}

/**
 * Whether a text is the last shared answer without an id: the only reply a transport may keep what it
 * made of (a shared result holds no secret; any other reply may, a pairing's device token say, and is
 * not kept past its sending).
 */
export function isSharedAnswerText(text: string): boolean {
  return text === lastBareText;
}
