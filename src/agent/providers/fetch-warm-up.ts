import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * One request of Node's fetch, which the provider SDKs send with, to a throwaway server on loopback (the
 * service's own port would count against its connection limits and `allow_from`). Node builds fetch's
 * parts at their first use: undici's modules, its HTTP parser (WebAssembly, compiled then), the
 * connection pool, and, as the body is read to its end and let go like an SDK reads a stream, the stream
 * machinery's own vm context: tens of milliseconds of a first turn on this loaded machine (issue 25).
 */
export async function warmUpFetch(): Promise<void> {
  const server = http.createServer((_req, res) => res.end('warm'));
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const reader = response.body?.getReader();
    if (!reader) return;
    while (!(await reader.read()).done);
    reader.releaseLock();
  } finally {
    server.closeAllConnections();
    server.close();
  }
}
