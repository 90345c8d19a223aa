// Bundles every entry point into dist/ (Node, CommonJS) and copies the sql.js and SQLite WASM beside them.
import { build, context } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { asciiOnly } from './scripts/ascii-only.mjs';

const production = process.argv.includes('--production');
// `npm run watch` (F5's pre-launch task): rebuild on every change; the lines below tell VS Code's task when.
const watch = process.argv.includes('--watch');
mkdirSync('dist', { recursive: true });
copyFileSync('node_modules/sql.js/dist/sql-wasm.wasm', 'dist/sql-wasm.wasm');
// history.db's SQLite (node-sqlite3-wasm looks for its WASM beside the script that loads it).
copyFileSync('node_modules/node-sqlite3-wasm/dist/node-sqlite3-wasm.wasm', 'dist/node-sqlite3-wasm.wasm');

/**
 * zod brings every language of its error messages (`z.locales`: 265 KB of extension.js, parsed at each
 * start) though only English, zod's default, is used: the locales' index is reduced to English alone.
 * Nothing in src uses `z.locales` (a build that did would fail to find the language it names).
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({ contents: "export { default as en } from './en.js';", loader: 'js' }));
  },
};

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  plugins: [zodEnglishOnly, asciiOnly],
};

// The chat UI (src/web): one browser bundle per host, beside media/chat.css and media/phone.html.
// Always minified: `npm start` serves this very file to phones (about 55 KB gzipped rather than 1.5 MB
// with an inline source map). Development builds write the map beside it (linked), which no server
// of the page serves (they serve known files only; the Worker refuses .map).
/**
 * The page's tunnel takes @noble as a static import: src/tunnel/noble.ts's `require` at first use serves
 * the service thread's load (issue 25), and costs a browser bundle its CommonJS wrappers (~1 KB of
 * chat-phone.js, which phone-static.test.ts keeps under 100 KB gzipped) for nothing.
 */
const nobleStatic = {
  name: 'noble-static',
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]tunnel[\\/]noble\.ts$/ }, (args) => ({
      contents: "import * as modules from './noble-modules';\nexport const noble = () => modules;\n",
      loader: 'ts',
      resolveDir: path.dirname(args.path),
    }));
  },
};

const browser = {
  bundle: true,
  plugins: [nobleStatic],
  platform: 'browser',
  format: 'iife',
  target: ['es2022', 'chrome110', 'safari16'],
  sourcemap: production ? false : 'linked',
  minify: true,
  logLevel: 'warning',
  outdir: 'media',
};

/**
 * The heaviest dependencies, each in a file of its own under dist/sdk/, which the service requires when
 * first needed (a turn's provider, a push, an MCP server: see the `require`s in src) rather than at start.
 * Inlined, they were more than half of cli.js and extension.js, which a start parses in full.
 * Key: the import as written in src; value: the file under dist/sdk/ and what it is built from.
 */
const SPLIT = {
  openai: { file: 'openai', entry: 'openai' },
  '@anthropic-ai/sdk': { file: 'anthropic', entry: '@anthropic-ai/sdk' },
  'web-push': { file: 'web-push', entry: 'web-push' },
  './mcp-sdk-modules': { file: 'mcp', entry: 'src/agent/tools/mcp-sdk-modules.ts' },
  // The pairing QR code's SVG (the editor's Connection Info, the CLI's `pair`): 56 KB of extension.js.
  qrcode: { file: 'qrcode', entry: 'qrcode' },
};
const splitOff = {
  name: 'split-off',
  setup(b) {
    const filter = new RegExp(
      `^(${Object.keys(SPLIT)
        .map((k) => k.replace(/[./@-]/g, '\\$&'))
        .join('|')})$`,
    );
    // Every bundle that requires them lives in dist/, so the path is relative to it.
    b.onResolve({ filter }, (args) => ({ path: `./sdk/${SPLIT[args.path].file}.js`, external: true }));
  },
};
const split = Object.values(SPLIT).map(({ file, entry }) => ({ ...common, entryPoints: { [file]: entry }, outdir: 'dist/sdk' }));

const builds = [
  ...split,
  // The command line: cli.js runs cli-main.js compiled with V8's code cache (src/cli-loader.ts), written below.
  { ...common, entryPoints: { cli: 'src/cli-loader.ts' }, outdir: 'dist', banner: { js: '#!/usr/bin/env node' } },
  // As a function of a CommonJS module's arguments, the text the loader compiles: a wrapper added at start
  // made V8 flatten the joined 2 MB string before compiling it.
  {
    ...common,
    entryPoints: { 'cli-main': 'src/cli.ts' },
    outdir: 'dist',
    plugins: [...common.plugins, splitOff],
    banner: { js: '(function (exports, require, module, __filename, __dirname) {' },
    footer: { js: '})' },
  },
  { ...common, entryPoints: { relay: 'src/relay/node/main.ts' }, outdir: 'dist', banner: { js: '#!/usr/bin/env node' } },
  { ...common, entryPoints: { 'compact-worker': 'src/store/compact-worker.ts' }, outdir: 'dist' },
  { ...common, entryPoints: { 'history-worker': 'src/store/history/history-worker.ts' }, outdir: 'dist' },
  // The service alone, for the benches that run it in their own process (bench/bundled.ts): what the
  // command line and the editor run is esbuild's output, not tsx's transform of src (which keeps every
  // function's name with a call a closure), with what a bench reads of its modules (bench/bundle-entry.ts).
  // Not in the .vsix (.vscodeignore lists what goes in).
  { ...common, entryPoints: { 'bench-service': 'bench/bundle-entry.ts' }, outdir: 'dist', plugins: [...common.plugins, splitOff] },
  { ...common, entryPoints: { extension: 'src/extension/extension.ts' }, outdir: 'dist', external: ['vscode'], plugins: [...common.plugins, splitOff] },
  // The service in the editor, on a worker thread of the extension host (src/service-thread/hosted-service.ts):
  // service-thread.js runs service-thread-main.js with V8's code cache (thread-loader.ts), a function of a
  // CommonJS module's arguments as cli-main.js.
  { ...common, entryPoints: { 'service-thread': 'src/service-thread/thread-loader.ts' }, outdir: 'dist' },
  {
    ...common,
    entryPoints: { 'service-thread-main': 'src/service-thread/service-thread.ts' },
    outdir: 'dist',
    plugins: [...common.plugins, splitOff],
    banner: { js: '(function (exports, require, module, __filename, __dirname) {' },
    footer: { js: '})' },
  },
  // The relay's Cloudflare Worker: one ES module with no Node built-ins (the neutral platform refuses them).
  {
    // Alone in its folder: wrangler uploads every module beside it.
    entryPoints: { relay: 'src/relay/worker/worker.ts' },
    outdir: 'dist/worker',
    bundle: true,
    platform: 'neutral',
    format: 'esm',
    target: 'es2022',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'browser'],
    minify: production,
    logLevel: 'warning',
  },
  // sw.js: the phone page's service worker (Web Push), served beside phone.html so its scope is the page's.
  // qr-decode.js: jsQR, loaded by the page only to read a QR code from a picture (src/web/machines/qr-reader.ts).
  {
    ...browser,
    entryPoints: { 'chat-webview': 'src/web/chat-webview.ts', 'chat-phone': 'src/web/chat-phone.ts', sw: 'src/web/push-worker.ts', 'qr-decode': 'src/web/qr-decode.ts' },
  },
];

if (watch) {
  let pending = 0;
  const announce = {
    name: 'announce',
    setup(b) {
      b.onStart(() => {
        if (pending++ === 0) console.log('[watch] build started');
      });
      b.onEnd(() => {
        if (--pending === 0) console.log('[watch] build finished');
      });
    },
  };
  const contexts = await Promise.all(builds.map((options) => context({ ...options, plugins: [...(options.plugins ?? []), announce] })));
  await Promise.all(contexts.map((ctx) => ctx.watch()));
} else {
  await Promise.all(builds.map((options) => build(options)));
  // With the node that builds (V8 refuses a cache of another version or other flags, at no cost but
  // the compile it would have saved). `npm run watch` writes none: the loader then finds the cache
  // older than the bundle and compiles as before.
  // It rehearses a start (src/cli-rehearsal.ts); what that start leaves running (the git starter) does not hold the build.
  // A rehearsal that was not whole fails a production build (the cache it ships would hold another path
  // than a start's), unless RA_PARTIAL_CODE_CACHE=1 (a sandbox without loopback); a development build
  // only says so.
  const strict = production && process.env.RA_PARTIAL_CODE_CACHE !== '1';
  execFileSync(process.execPath, ['-e', `require("./dist/cli.js").writeCodeCache().then((problem) => process.exit(problem !== undefined && ${strict} ? 1 : 0))`], { stdio: 'inherit' });
}
