import type { Envelope } from './envelope';

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
const SLOTS = 2;
const frames: (object | undefined)[] = new Array<object | undefined>(SLOTS).fill(undefined);
const texts: string[] = new Array<string>(SLOTS).fill('');
let next = 0;
let clearing = false;

function clear(): void {
  frames.fill(undefined);
  texts.fill('');
  clearing = false;
}

export function wireText(frame: object): string {
  for (let i = 0; i < SLOTS; i += 1) if (frames[i] === frame) return texts[i]!;
  const text = JSON.stringify(frame);
  frames[next] = frame;
  texts[next] = text;
  next = (next + 1) % SLOTS;
  // Kept for the synchronous run only: a large frame is not held after it was sent.
  if (!clearing) {
    clearing = true;
    queueMicrotask(clear);
  }
  return text;
}

/**
 * Results that many answers share while nothing in them changes (get_config's, asked by every client at
 * start and polled by scripts): their text, made once and kept as long as the result lives (a WeakMap
 * entry for these few objects only; see above for why not for every frame).
 */
const sharedTexts = new WeakMap<object, string>();

/** Marks a result as shared: it is never changed after this (its text is made now). */
export function sharedResult<T extends object>(result: T): Readonly<T> {
  sharedTexts.set(result, JSON.stringify(result));
  return result;
}

/** An answer's JSON text, the same as JSON.stringify's: a shared result's text is not made again. */
export function envelopeText(envelope: Envelope): string {
  const data = envelope.status === 'ok' ? sharedTexts.get(envelope.data) : undefined;
  if (data === undefined) return JSON.stringify(envelope);
  return envelope.id === undefined ? `{"status":"ok","data":${data}}` : `{"status":"ok","data":${data},"id":${JSON.stringify(envelope.id)}}`;
}
