import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlib, gzip } from 'node:zlib';

/** One file the phone page's servers may send: where it is and its content type. */
export interface AssetFile {
  path: string;
  type: string;
}

type Encoding = 'br' | 'gzip';

/** A file's bytes as read once, with its compressed forms made on first demand. */
interface Loaded {
  identity: Buffer;
  /** Strong validator of the bytes; each encoding gets its own tag (`<hash>-br`), as HTTP requires. */
  hash: string;
  encoded: Map<Encoding, Promise<Buffer>>;
}

const compress: Record<Encoding, (body: Buffer) => Promise<Buffer>> = {
  br: (body) => promisify(brotliCompress)(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } }),
  gzip: (body) => promisify(gzip)(body, { level: 9 }),
};

/** Text is worth compressing; PNGs are compressed already. */
const COMPRESSIBLE = /^(text\/|application\/(json|javascript|manifest\+json)|image\/svg\+xml)/;

/**
 * Serves the phone page's files (for the service and the Node relay): compressed with br or gzip when
 * the client accepts it, each file read and compressed once and kept in memory until it changes on
 * disk (size or mtime), with an ETag so a browser revalidates (`no-cache`) and gets 304 when nothing
 * changed, instead of downloading the bundle again.
 */
export class AssetServer {
  private readonly cache = new Map<string, { version: string; loaded: Promise<Loaded> }>();

  constructor(private readonly headers: Readonly<Record<string, string>>) {}

  /** Answers a GET or HEAD with `file`; false (nothing sent) when it cannot be read. */
  async serve(file: AssetFile, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    let loaded: Loaded;
    try {
      loaded = await this.load(file.path);
    } catch {
      return false;
    }
    const encoding = COMPRESSIBLE.test(file.type) ? preferredEncoding(req.headers['accept-encoding']) : undefined;
    const etag = `"${loaded.hash}${encoding ? `-${encoding}` : ''}"`;
    const common = { ...this.headers, 'cache-control': 'no-cache', etag, vary: 'accept-encoding' };
    if (matchesAny(req.headers['if-none-match'], loaded.hash)) {
      res.writeHead(304, common).end();
      return true;
    }
    const body = encoding ? await this.encoded(loaded, encoding) : loaded.identity;
    res.writeHead(200, {
      ...common,
      'content-type': file.type,
      'content-length': body.length,
      ...(encoding ? { 'content-encoding': encoding } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  }

  private async load(path: string): Promise<Loaded> {
    const info = await stat(path);
    const version = `${info.size}:${info.mtimeMs}`;
    const cached = this.cache.get(path);
    if (cached?.version === version) return cached.loaded;
    const loaded = readFile(path).then((identity) => ({
      identity,
      hash: createHash('sha256').update(identity).digest('base64url').slice(0, 27),
      encoded: new Map<Encoding, Promise<Buffer>>(),
    }));
    this.cache.set(path, { version, loaded });
    loaded.catch(() => this.cache.delete(path));
    return loaded;
  }

  private encoded(loaded: Loaded, encoding: Encoding): Promise<Buffer> {
    let body = loaded.encoded.get(encoding);
    if (!body) {
      body = compress[encoding](loaded.identity);
      loaded.encoded.set(encoding, body);
    }
    return body;
  }
}

/** br, else gzip, when Accept-Encoding allows it (q > 0); undefined: send the bytes as they are. */
export function preferredEncoding(header: string | string[] | undefined): Encoding | undefined {
  const accepted = new Map<string, number>();
  for (const part of (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    if (name) accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const allows = (name: Encoding) => (accepted.get(name) ?? accepted.get('*') ?? 0) > 0;
  if (allows('br')) return 'br';
  if (allows('gzip')) return 'gzip';
  return undefined;
}

/** Whether If-None-Match names any representation of the bytes hashed `hash` (or is `*`). */
function matchesAny(header: string | undefined, hash: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const value = tag.trim().replace(/^W\//, '');
    return value === '*' || value === `"${hash}"` || value === `"${hash}-br"` || value === `"${hash}-gzip"`;
  });
}
