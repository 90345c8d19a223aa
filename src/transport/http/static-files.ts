import { join } from 'node:path';
import { PAGE_SECURITY_HEADERS } from '../../protocol/page-headers';
import type { RouteHandler } from './http-server';
import { AssetServer } from '../../platform/static-asset';

/**
 * The phone page, served by the service for the LAN from the extension's `media/` folder. Only the
 * files named here are served (a fixed table, so no path from a request ever reaches the file system),
 * and only to addresses `allow_from` admits (the server checks that before any route).
 */
const PHONE_FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'phone.html', type: 'text/html; charset=utf-8' },
  '/phone.html': { file: 'phone.html', type: 'text/html; charset=utf-8' },
  '/chat-phone.js': { file: 'chat-phone.js', type: 'text/javascript; charset=utf-8' },
  // The QR decoder, loaded by the page only when a computer is added from a picture of its QR code.
  '/qr-decode.js': { file: 'qr-decode.js', type: 'text/javascript; charset=utf-8' },
  // The service worker (Web Push): at the page's own path, so its default scope is the page's.
  '/sw.js': { file: 'sw.js', type: 'text/javascript; charset=utf-8' },
  '/chat.css': { file: 'chat.css', type: 'text/css; charset=utf-8' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
  '/icon-192.png': { file: 'icon-192.png', type: 'image/png' },
  '/icon-512.png': { file: 'icon-512.png', type: 'image/png' },
  '/manifest.webmanifest': { file: 'manifest.webmanifest', type: 'application/manifest+json' },
};

export function phonePageRoutes(mediaDir: string): Map<string, RouteHandler> {
  const routes = new Map<string, RouteHandler>();
  const assets = new AssetServer(PAGE_SECURITY_HEADERS);
  for (const [path, { file, type }] of Object.entries(PHONE_FILES)) {
    routes.set(`GET ${path}`, async (req, res) => {
      if (await assets.serve({ path: join(mediaDir, file), type }, req, res)) return;
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', error: `${file} is not built (npm run build)`, code: 'not_found' }));
    });
  }
  return routes;
}
