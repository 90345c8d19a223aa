/** The service serves the phone page for the LAN: at `/`, a fixed set of files, no traversal, behind allow_from. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { startService, type RunningService } from './helpers/service';

let svc: RunningService;
let closed: RunningService;

before(async () => {
  assert.ok(existsSync(resolve('media/chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
  svc = await startService({});
  // allow_from that does not admit loopback: nothing may be served, the page included.
  closed = await startService({}, { allowFrom: ['10.11.12.13'] });
});

after(async () => {
  await svc?.dispose();
  await closed?.dispose();
});

/** A raw GET, so the path is sent exactly as written (fetch would normalize `..`). */
function rawGet(base: string, path: string): Promise<{ status: number; type?: string; body: string; headers: http.IncomingHttpHeaders }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolvePromise, reject) => {
    const req = http.request({ host: hostname, port, path, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('GET / is the phone page, with its script, styles, manifest and icons', async () => {
  const page = await rawGet(svc.httpUrl, '/');
  assert.equal(page.status, 200);
  assert.match(page.type ?? '', /^text\/html/);
  assert.equal(page.body, await readFile(resolve('media/phone.html'), 'utf8'));
  assert.match(page.body, /<link rel="manifest" href="manifest.webmanifest">/);
  assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  for (const [path, type] of [['/chat-phone.js', 'text/javascript'], ['/chat.css', 'text/css'], ['/manifest.webmanifest', 'application/manifest+json'], ['/icon.svg', 'image/svg+xml'], ['/icon-192.png', 'image/png'], ['/icon-512.png', 'image/png']]) {
    const res = await rawGet(svc.httpUrl, path);
    assert.equal(res.status, 200, path);
    assert.ok(res.type?.startsWith(type), `${path}: ${res.type}`);
  }
  const manifest = JSON.parse((await rawGet(svc.httpUrl, '/manifest.webmanifest')).body) as { icons: { src: string; sizes: string }[] };
  assert.deepEqual(manifest.icons.filter((i) => i.src.endsWith('.png')).map((i) => i.sizes), ['192x192', '512x512']);
});

test('nothing outside the fixed list is served: traversal, other media files, the data directory', async () => {
  for (const path of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/media/phone.html', '/chat-webview.js', '/service.json', '/service.db', '/phone.html/', '//etc/passwd', '/icon.svg%00.html']) {
    const res = await rawGet(svc.httpUrl, path);
    assert.equal(res.status, 404, path);
    assert.equal(JSON.parse(res.body).code, 'not_found', path);
    assert.ok(!res.body.includes('"name": "remote-assistant"'), path);
  }
});

test('allow_from applies to the page as to everything else', async () => {
  for (const path of ['/', '/chat-phone.js', '/manifest.webmanifest']) {
    const res = await rawGet(closed.httpUrl, path);
    assert.equal(res.status, 403, path);
    assert.equal(JSON.parse(res.body).code, 'unauthorized');
  }
});
