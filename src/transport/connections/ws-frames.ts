import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { keptForTheRun } from '../../protocol';

/**
 * A server's WebSocket text frame (RFC 6455 5.2: FIN, opcode 1, unmasked), header and UTF-8 payload in
 * one buffer. Server frames are not masked, so one frame's bytes are the same for every client: an
 * event sent to a conversation's hundred followers is framed once and the same buffer is written to
 * each socket (`npm run bench -- follow`, issue 25).
 */
export function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81;
  if (header === 2) frame[1] = length;
  else if (header === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  frame.write(text, header, 'utf8');
  return frame;
}

/* The frame of a text, made once for the followers an event is sent to one after the other in one run. */
const sharedTextFrame = keptForTheRun(textFrame);

/**
 * Sends `text` to an open WebSocket as one ready frame written straight to its TCP socket: one buffer
 * and one write instead of ws's framing, cork, two writes and uncork per frame (a reply's and every
 * follower's cost, `npm run bench -- ws follow`). Only done where ws itself would write the frame at once
 * and unchanged: no extension negotiated (the service offers none, so no compression queue) and the
 * connection open; otherwise ws sends it. Frames stay in order: ws writes its own (pings, close) to the
 * same socket synchronously too.
 */
export function sendText(socket: WebSocket, text: string): void {
  if (socket.readyState !== socket.OPEN) return;
  const raw = (socket as unknown as { _socket?: Socket })._socket;
  if (socket.extensions !== '' || !raw || !raw.writable) {
    socket.send(text);
    return;
  }
  raw.write(sharedTextFrame(text));
}
