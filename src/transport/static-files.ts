import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RouteHandler } from './http-server';

/**
 * The phone page, served by the service for the LAN from the extension's `media/` folder. Only the
 * files named here are served (a fixed table, so no path from a request ever reaches the file system),
 * and only to addresses `allow_from` admits (the server checks that before any route).
 */
const PHONE_FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'phone.html', type: 'text/html; charset=utf-8' },
  '/phone.html': { file: 'phone.html', type: 'text/html; charset=utf-8' },
  '/chat-phone.js': { file: 'chat-phone.js', type: 'text/javascript; charset=utf-8' },
  '/chat.css': { file: 'chat.css', type: 'text/css; charset=utf-8' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
  '/icon-192.png': { file: 'icon-192.png', type: 'image/png' },
  '/icon-512.png': { file: 'icon-512.png', type: 'image/png' },
  '/manifest.webmanifest': { file: 'manifest.webmanifest', type: 'application/manifest+json' },
};

/** The same policy as the page's meta tag, as a header too (it then also covers the script and manifest). */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; manifest-src 'self'; connect-src ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function phonePageRoutes(mediaDir: string): Map<string, RouteHandler> {
  const routes = new Map<string, RouteHandler>();
  for (const [path, { file, type }] of Object.entries(PHONE_FILES)) {
    routes.set(`GET ${path}`, async (_req, res) => {
      let body: Buffer;
      try {
        body = await readFile(join(mediaDir, file));
      } catch {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', error: `${file} is not built (npm run build)`, code: 'not_found' }));
        return;
      }
      res.writeHead(200, {
        'content-type': type,
        'content-length': body.length,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'content-security-policy': CSP,
      });
      res.end(body);
    });
  }
  return routes;
}
