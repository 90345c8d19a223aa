import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { isSharedAnswerText, keptForTheRun, takeRoom, textOf, type MeasuredText } from '../../protocol';

/**
 * A server's WebSocket text frame (RFC 6455 5.2: FIN, opcode 1, unmasked), header and UTF-8 payload in
 * one buffer. Server frames are not masked, so one frame's bytes are the same for every client: an
 * event sent to a conversation's hundred followers is framed once and the same buffer is written to
 * each socket (`npm run bench -- follow`, issue 25).
 */
export function textFrame(text: string): Buffer {
  return measuredFrame({ parts: [text], bytes: Buffer.byteLength(text) });
}

/**
 * The text frame of a text in measured parts (protocol/wire-text.ts `MeasuredText`: an export's piece,
 * its UTF-8 bytes made already, and the answer around it), each part written into the frame in turn: the
 * parts are never joined into one string, whose flattening copied the piece's megabyte, nor measured or
 * encoded again. Bytes made with room around them (wire-text.ts `bytesWithRoom`) are not even copied:
 * the frame's head and the parts before them are written into the room before, the rest into the room
 * after, and the frame is that stretch of their buffer.
 */
export function measuredFrame(text: MeasuredText): Buffer {
  return framedInPlace(text) ?? framedAnew(text);
}

/** Bytes of a frame's head for a payload of `length` bytes. */
function headBytes(length: number): number {
  return length < 126 ? 2 : length < 65_536 ? 4 : 10;
}

function writeHead(frame: Buffer, length: number): number {
  const head = headBytes(length);
  frame[0] = 0x81;
  if (head === 2) frame[1] = length;
  else if (head === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  return head;
}

/**
 * Writes `parts` into `room` from `at` on, bytes copied as they are, and answers where they ended. Parts
 * longer than the room stop at its end: the caller gives it more room than the parts were measured to
 * take (4 bytes, one more character), and a measure that lies is caught there, never sent as a frame's
 * length (the client would read the garbage as the next frame).
 */
function writeParts(room: Buffer, at: number, parts: readonly (string | Uint8Array)[]): number {
  for (const part of parts) {
    if (typeof part === 'string') at += room.write(part, at, 'utf8');
    else if (at + part.length <= room.length) at += (room.set(part, at), part.length);
    else at = room.length;
  }
  return at;
}

function framedAnew({ parts, bytes: length }: MeasuredText): Buffer {
  const head = headBytes(length);
  const room = Buffer.allocUnsafe(head + length + 4);
  const at = writeParts(room, writeHead(room, length), parts);
  if (at !== head + length) throw new Error(`measuredFrame: the parts are not ${length} bytes long`);
  return room.subarray(0, head + length);
}

/** The frame written around the bytes that own their room (see measuredFrame), or undefined when no part does or it is too small. */
function framedInPlace({ parts, bytes: length }: MeasuredText): Buffer | undefined {
  const i = parts.findIndex((part) => typeof part !== 'string' && takeRoom(part));
  if (i < 0) return undefined;
  const bytes = parts[i] as Uint8Array;
  const before = parts.slice(0, i);
  const after = parts.slice(i + 1);
  // Where the frame starts: the head and the parts before, measured now (a few hundred bytes), end at the bytes.
  const start = bytes.byteOffset - headBytes(length) - before.reduce((sum, part) => sum + (typeof part === 'string' ? Buffer.byteLength(part) : part.length), 0);
  const end = start + headBytes(length) + length;
  // Room short (or a measure short of the bytes themselves): a copy, which checks the measure.
  if (start < 0 || end < bytes.byteOffset + bytes.length || end + 4 > bytes.buffer.byteLength) return framedAnew({ parts, bytes: length });
  const room = Buffer.from(bytes.buffer, start, end + 4 - start);
  writeParts(room, writeHead(room, length), before);
  const at = writeParts(room, bytes.byteOffset + bytes.length - start, after);
  if (at !== end - start) throw new Error(`measuredFrame: the parts are not ${length} bytes long`);
  return room.subarray(0, end - start);
}

/* The frame of an event's text, made once for the followers it is sent to one after the other in one run. */
const sharedTextFrame = keptForTheRun(textFrame);

/**
 * Sockets written to in this tick. The first frame of a tick goes out at once; a second one corks its
 * socket until the tick's end, and the frames that follow, ws's own included, go out with it in one
 * write (a catch-up's replay, a reply and its turn's events): one system call instead of one a frame.
 * Corking keeps the order: ws writes its frames (pong, close) to the same corked socket, and ending the
 * socket (ws's close) uncorks it first. Each socket notes the tick it was last written in (a number on
 * the socket), so a fan-out to a hundred followers adds nothing to a set and allocates nothing per
 * socket for this (a set of the tick's sockets grew and was made again each fan-out: docs/design.md,
 * "Followers' p99 in every run (s13, follow13)").
 */
const WRITTEN_IN_TICK = Symbol('writtenInTick');
type TickSocket = Socket & { [WRITTEN_IN_TICK]?: number };
let tick = 1;
let tickPending = false;
const corkedThisTick: Socket[] = [];

function endTick(): void {
  tick += 1;
  tickPending = false;
  if (corkedThisTick.length === 0) return;
  // Uncorked in the order they were corked; a socket destroyed meanwhile drops its frames (as ws's own would).
  for (const raw of corkedThisTick.splice(0)) raw.uncork();
}

function writeFrame(raw: TickSocket, frame: Buffer): void {
  if (!tickPending) {
    tickPending = true;
    process.nextTick(endTick);
  }
  if (raw[WRITTEN_IN_TICK] !== tick) raw[WRITTEN_IN_TICK] = tick;
  else if (raw.writableCorked === 0) {
    // Written before in this tick, not corked yet (ws corks and uncorks within one of its own writes).
    raw.cork();
    corkedThisTick.push(raw);
  }
  raw.write(frame);
}

/** Longest reply text whose frame is kept for the next reply of the same text (replyFrame). */
const MAX_KEPT_REPLY_CHARS = 4096;
let keptReplyText: string | undefined;
let keptReplyFrame: Buffer | undefined;

/**
 * A reply's frame. The last one is kept while the same text is sent again: a shared answer without an
 * id is the same string each time (protocol/wire-text.ts `envelopeText`: get_config polled by a script,
 * or asked by many clients at once), so its frame is made once. A frame is never changed once made, so
 * the same buffer may wait in several sockets' queues. Only a small text is kept (its frame lives until
 * another reply is sent); comparing a different text costs nothing unless it has the same length. Only
 * a shared answer's text is kept (isSharedAnswerText): another reply may hold a secret (a pairing's
 * device token), which must not live on in this module after its sending.
 */
function replyFrame(text: string): Buffer {
  if (text === keptReplyText) return keptReplyFrame!;
  const frame = textFrame(text);
  if (text.length <= MAX_KEPT_REPLY_CHARS && isSharedAnswerText(text)) {
    keptReplyText = text;
    keptReplyFrame = frame;
  }
  return frame;
}

/**
 * What sends text frames to one open WebSocket: each frame as one ready buffer written to its TCP socket,
 * instead of ws's framing and two writes per frame (a reply's and every follower's cost, `npm run bench
 * -- ws follow`), the frames of one tick to one socket in one write (writeFrame). `shared`: the text goes
 * to many sockets in this run (an event), so its frame is made once for all of them; a reply's is made
 * for it alone, unless it repeats the last reply's text (replyFrame). A reply in measured parts (an
 * export's piece) is framed from its parts (measuredFrame). Only done where ws itself would write the frame at once and unchanged: no extension
 * negotiated (the service offers none, so no compression queue) and the connection open; otherwise ws
 * sends it. What does not change for a connection (its extensions, its TCP socket) is looked at once.
 */
export function textSender(socket: WebSocket): (text: string | MeasuredText, shared?: boolean) => void {
  const raw = socket.extensions === '' ? (socket as unknown as { _socket?: Socket })._socket : undefined;
  return (text, shared = false) => {
    if (socket.readyState !== socket.OPEN) return;
    if (!raw?.writable) return socket.send(textOf(text));
    writeFrame(raw, typeof text !== 'string' ? measuredFrame(text) : shared ? sharedTextFrame(text) : replyFrame(text));
  };
}
