// A request body the network cuts short, sent on a raw socket (the service's and the relay's tests).
import net from 'node:net';

/**
 * A JSON POST to 127.0.0.1:`port` whose Content-Length is the whole body's and whose sender closes
 * (FIN) after the first `sent` characters of it, as a network cutting the body short: resolves with the
 * status answered (-1: none). A refusal answered before the body is read leaves the connection open:
 * its answer ends it.
 */
export function cutPost(port: number, path: string, body: string, sent: number, headers: Record<string, string> = {}): Promise<number> {
  return new Promise<number>((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (/\r\n\r\n/.test(text)) socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? -1)));
    const head = Object.entries({ Host: 'x', 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
    socket.end(body.slice(0, sent));
  });
}
