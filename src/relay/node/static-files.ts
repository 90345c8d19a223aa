import { readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { extname, join } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

/** The page served at `/`. */
export const INDEX_FILE = 'phone.html';

/**
 * The phone page's files, served from one flat folder. Only the files listed when the relay starts,
 * by their exact names, can be served, so no request path can reach anything else (no `..`, no
 * encoded separators, no symlinked folders).
 */
export class StaticFiles {
  private readonly files = new Map<string, { path: string; type: string }>();

  constructor(dir: string) {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      // No folder (an unbuilt checkout): nothing is served, the relay still works.
    }
    for (const name of names) {
      const type = TYPES[extname(name).toLowerCase()];
      const path = join(dir, name);
      if (type && statSync(path).isFile()) this.files.set(`/${name}`, { path, type });
    }
    const index = this.files.get(`/${INDEX_FILE}`);
    if (index) this.files.set('/', index);
  }

  get size(): number {
    return this.files.size;
  }

  /** Answers a GET or HEAD of `pathname`; false when there is no such file. */
  async serve(pathname: string, method: string, res: ServerResponse): Promise<boolean> {
    const file = this.files.get(pathname);
    if (!file) return false;
    let body: Buffer;
    try {
      body = await readFile(file.path);
    } catch {
      return false;
    }
    res.writeHead(200, {
      'content-type': file.type,
      'content-length': body.length,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
    res.end(method === 'HEAD' ? undefined : body);
    return true;
  }
}
