import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Runs `use` with the address of a throwaway HTTP server on loopback that answers every request (its
 * body read whole) with `chunks`, one write each, and closes the connection; the server is closed once
 * `use` settles, or at once when `ended` aborts (the warm-up's end: stop, a first turn), which also ends
 * this step (rejected with the abort's reason) without waiting for `use`. The service's own port would
 * count against its connection limits and `allow_from`.
 */
export async function onLoopback<T>(chunks: readonly string[], contentType: string, use: (origin: string) => Promise<T>, ended?: AbortSignal): Promise<T> {
  ended?.throwIfAborted();
  const server = http.createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      res.writeHead(200, { 'content-type': contentType, connection: 'close' });
      for (const chunk of chunks) res.write(chunk);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => (onAbort = () => reject(ended!.reason)));
  aborted.catch(() => undefined);
  ended?.addEventListener('abort', onAbort, { once: true });
  if (ended?.aborted) onAbort();
  try {
    return await Promise.race([use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), aborted]);
  } finally {
    ended?.removeEventListener('abort', onAbort);
    server.closeAllConnections();
    server.close();
  }
}

/**
 * One request of Node's fetch, which the provider SDKs send with, to a throwaway server on loopback
 * (onLoopback). Node builds fetch's parts at their first use: undici's modules, its HTTP parser
 * (WebAssembly, compiled then), the connection pool, and, as the body is read to its end and let go like
 * an SDK reads a stream, the stream machinery's own vm context: tens of milliseconds of a first turn on
 * this loaded machine (issue 25).
 */
export function warmUpFetch(ended?: AbortSignal): Promise<void> {
  return onLoopback(
    ['warm'],
    'text/plain',
    async (origin) => {
      const response = await fetch(`${origin}/`);
      const reader = response.body?.getReader();
      if (!reader) return;
      while (!(await reader.read()).done);
      reader.releaseLock();
    },
    ended,
  );
}
