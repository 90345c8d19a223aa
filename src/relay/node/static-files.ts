import { readdirSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { AssetServer } from '../../platform/static-asset';
import { PAGE_SECURITY_HEADERS } from '../../protocol/page-headers';

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
 * by their exact names and known types, can be served, so no request path can reach anything else
 * (no `..`, no encoded separators, no symlinked folders, no source maps: `.map` is not a known type).
 */
export class StaticFiles {
  private readonly files = new Map<string, { path: string; type: string }>();
  private readonly assets = new AssetServer(PAGE_SECURITY_HEADERS);

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

  /** Answers a GET or HEAD of `pathname` (compressed, with an ETag: see AssetServer); false when there is no such file. */
  serve(pathname: string, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const file = this.files.get(pathname);
    return file ? this.assets.serve(file, req, res) : Promise.resolve(false);
  }
}
