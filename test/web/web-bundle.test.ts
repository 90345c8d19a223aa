// The chat UI is typed from src/protocol with type-only imports: the browser bundle must not pull in
// zod (or any schema runtime) through them. Bundles the browser entry points (the two chat pages, the phone's service worker and its QR decoder) as esbuild.mjs does and reads
// which files went in.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build } from 'esbuild';

test('the web bundles hold no zod: src/protocol comes in as types only (its zod-free readers aside)', async () => {
  const result = await build({
    entryPoints: { 'chat-webview': 'src/web/chat-webview.ts', 'chat-phone': 'src/web/chat-phone.ts', sw: 'src/web/push-worker.ts', 'qr-decode': 'src/web/qr-decode.ts' },
    bundle: true,
    platform: 'browser',
    format: 'iife',
    write: false,
    metafile: true,
    outdir: 'media',
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(
    inputs.some((file) => file.startsWith('src/web/chat/')),
    'the bundle holds the chat UI',
  );
  assert.deepEqual(
    inputs.filter((file) => file.includes('node_modules/zod')),
    [],
    'zod in the browser bundle: a value import from src/protocol (use `import type`)',
  );
  // From src/protocol only the modules written without zod for the browser come in as code.
  assert.deepEqual(inputs.filter((file) => file.startsWith('src/protocol/')).sort(), [
    'src/protocol/attachment-limit.ts',
    'src/protocol/audit-labels.ts',
    'src/protocol/chat-context.ts',
    'src/protocol/client.ts',
    'src/protocol/code-points.ts',
    'src/protocol/display-name.ts',
    'src/protocol/export-reader.ts',
    'src/protocol/pending-requests.ts',
    'src/protocol/permission-text.ts',
    'src/protocol/plan-summary.ts',
    'src/protocol/push-payload.ts',
    'src/protocol/relay-client-frame.ts',
    'src/protocol/saved-prompt-text.ts',
    'src/protocol/sources.ts',
    // A tool's words for a person (words26: the page's cards and prompts, the service's push title).
    'src/protocol/tool-words.ts',
    // Which message a failed or stopped turn left unanswered (s31: the service's get_messages and the page's notice).
    'src/protocol/unanswered.ts',
    'src/protocol/version.ts',
  ]);
});
