/** The service serves the phone page for the LAN: at `/`, a fixed set of files, no traversal, behind allow_from. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { resolve } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import { startService, type RunningService } from '../helpers/service';

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

/** A raw GET, so the path is sent exactly as written (fetch would normalize `..`) and nothing is decompressed. */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; type?: string; body: string; bytes: Buffer; headers: http.IncomingHttpHeaders }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolvePromise, reject) => {
    const req = http.request({ host: hostname, port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolvePromise({ status: res.statusCode ?? 0, type: res.headers['content-type'], body: bytes.toString(), bytes, headers: res.headers });
      });
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
  for (const [path, type] of [
    ['/chat-phone.js', 'text/javascript'],
    ['/sw.js', 'text/javascript'],
    ['/chat.css', 'text/css'],
    ['/manifest.webmanifest', 'application/manifest+json'],
    ['/icon.svg', 'image/svg+xml'],
    ['/icon-192.png', 'image/png'],
    ['/icon-512.png', 'image/png'],
  ]) {
    const res = await rawGet(svc.httpUrl, path);
    assert.equal(res.status, 200, path);
    assert.ok(res.type?.startsWith(type), `${path}: ${res.type}`);
  }
  const manifest = JSON.parse((await rawGet(svc.httpUrl, '/manifest.webmanifest')).body) as { icons: { src: string; sizes: string }[] };
  assert.deepEqual(
    manifest.icons.filter((i) => i.src.endsWith('.png')).map((i) => i.sizes),
    ['192x192', '512x512'],
  );
});

test('nothing outside the fixed list is served: traversal, other media files, the data directory', async () => {
  for (const path of [
    '/../package.json',
    '/%2e%2e/package.json',
    '/..%2fpackage.json',
    '/media/phone.html',
    '/chat-webview.js',
    '/service.json',
    '/service.db',
    '/phone.html/',
    '//etc/passwd',
    '/icon.svg%00.html',
  ]) {
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

test('the page cannot be framed by another site (clickjacking): CSP frame-ancestors and X-Frame-Options', async () => {
  for (const path of ['/', '/phone.html']) {
    const page = await rawGet(svc.httpUrl, path);
    assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/, path);
    assert.equal(page.headers['x-frame-options'], 'DENY', path);
  }
});

test('the bundle is the minified one with no inline source map, compressed when accepted, and revalidated by ETag', async () => {
  const file = await readFile(resolve('media/chat-phone.js'));
  assert.ok(!file.includes('sourceMappingURL=data:'), 'no inline source map in the built bundle');
  const plain = await rawGet(svc.httpUrl, '/chat-phone.js');
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.ok(plain.bytes.equals(file), 'without Accept-Encoding: the file as it is');
  assert.match(String(plain.headers.vary), /accept-encoding/i);

  const gzipped = await rawGet(svc.httpUrl, '/chat-phone.js', { 'accept-encoding': 'gzip, deflate' });
  assert.equal(gzipped.headers['content-encoding'], 'gzip');
  assert.equal(Number(gzipped.headers['content-length']), gzipped.bytes.length);
  assert.ok(gunzipSync(gzipped.bytes).equals(file));
  console.log(`# chat-phone.js: ${file.length} bytes, ${gzipped.bytes.length} gzipped`);
  assert.ok(gzipped.bytes.length < 100_000, `${gzipped.bytes.length} bytes gzipped: not the minified bundle`);
  const brotli = await rawGet(svc.httpUrl, '/chat-phone.js', { 'accept-encoding': 'gzip, br' });
  assert.equal(brotli.headers['content-encoding'], 'br');
  assert.ok(brotliDecompressSync(brotli.bytes).equals(file));

  const etag = String(gzipped.headers.etag);
  assert.match(etag, /^(W\/)?"[^"]+"$/);
  assert.equal(gzipped.headers['cache-control'], 'no-cache');
  const again = await rawGet(svc.httpUrl, '/chat-phone.js', { 'accept-encoding': 'gzip', 'if-none-match': etag });
  assert.equal(again.status, 304);
  assert.equal(again.bytes.length, 0);
  const page = await rawGet(svc.httpUrl, '/', { 'accept-encoding': 'gzip' });
  const revalidated = await rawGet(svc.httpUrl, '/', { 'if-none-match': String(page.headers.etag) });
  assert.equal(revalidated.status, 304, 'the page too');
  const stale = await rawGet(svc.httpUrl, '/chat-phone.js', { 'if-none-match': '"something-else"' });
  assert.equal(stale.status, 200);
});
