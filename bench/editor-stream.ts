// What one streamed chat message costs the extension host's thread (issue 25's e2e stall, counted, not timed):
// the whole extension from source with the `vscode` double over the real service on its worker thread, the
// chat view resolved as VS Code would and driven as its page does (a `chat` frame with `stream: true`, the
// conversation followed once the first event names it), the model a fake OpenAI server in the parent
// process (20 pieces a reply, as the e2e's). Per message, on the extension host's thread: the messages
// across the service thread's port (each way, by kind and event), the chat webview's postMessage calls and
// their JSON bytes, the thread's CPU (schedstat), and the bytes V8's heap sampler saw allocated, split into
// ours (this tree's src/), the double's and node's. Load-independent but for the CPU.
// `npx tsx bench/editor-stream.ts` (MESSAGES 40, PIECES 20); `A=/other/tree` runs both trees, ROUNDS each,
// alternated.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import type { RecordedRequest } from '../test/helpers/fake-http';
import { fmt } from './util';

/** One tree's chat, in the child process: argv = double, tree, storage, base_url, messages. */
const CHILD = `
const [double, tree, storage, baseUrl, count] = process.argv.slice(2);
const vscode = require(double);
vscode.installVscodeDouble();
vscode.testing.settings.set('remoteAssistant.port', 0);
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { Session } = require('node:inspector');
const cpuMs = () => Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ', 1)[0]) / 1e6;
writeFileSync(join(storage, 'service.json'), JSON.stringify({ auth_token: 'bench-access-token-0123456789abcdef0123', base_url: baseUrl, model: 'fake-model', permission_mode: 'allow' }));
const kindOf = (m) => m.t === 'event' ? 'event ' + m.event.event : m.t === 'session-request' ? 'request ' + (m.frame && m.frame.type) : m.t;
(async () => {
  const ext = require(join(tree, 'src', 'extension', 'extension.ts'));
  const api = await ext.activate(vscode.fakeContext(storage, tree));
  if (api.hosting.state.state !== 'hosting') throw new Error('not hosting: ' + JSON.stringify(api.hosting.state));
  await api.hosting.service.ready;
  const worker = api.hosting.service.worker;
  let counting = false;
  const counts = { in: {}, batched: {}, out: {}, posts: 0, postBytes: 0, postKinds: {} };
  const add = (table, key) => { table[key] = (table[key] || 0) + 1; };
  // A batch (TickBatch) is one crossing, one post: counted so, and what it carried by kind.
  const unbatched = (m) => (m.t === 'batch' || m.kind === 'batch') && Array.isArray(m.messages) ? m.messages : [m];
  worker.on('message', (m) => { if (!counting) return; add(counts.in, kindOf(m)); if (m.t === 'batch') for (const one of m.messages) add(counts.batched, kindOf(one)); });
  const post = worker.postMessage.bind(worker);
  worker.postMessage = (m, ...rest) => { if (counting) add(counts.out, kindOf(m)); return post(m, ...rest); };
  const view = await vscode.testing.openView('remoteAssistant.chat');
  let waiting = new Map();
  let conversation;
  let followed = false;
  view.webview.postMessage = async (posted) => {
    if (counting) {
      counts.posts += 1;
      counts.postBytes += JSON.stringify(posted).length;
      add(counts.postKinds, posted.kind === 'event' ? 'event ' + posted.event.event : posted.kind);
    }
    for (const message of unbatched(posted)) take(message);
    return true;
  };
  const take = (message) => {
    if (message.kind === 'response' && waiting.has(message.envelope.id)) { waiting.get(message.envelope.id)(message.envelope); waiting.delete(message.envelope.id); }
    if (message.kind === 'event' && message.event.event === 'turn.ended' && waiting.has('ended')) { waiting.get('ended')(); waiting.delete('ended'); }
    if (message.kind === 'event' && !conversation && message.event.conversation_id) conversation = message.event.conversation_id;
  };
  view.webview.fromUi({ kind: 'ready' });
  let next = 0;
  const call = (frame) => new Promise((resolve) => { const id = 'ui-' + (next += 1); waiting.set(id, resolve); view.webview.fromUi({ kind: 'frame', frame: { ...frame, id } }); });
  const chat = async (i) => {
    const ended = new Promise((resolve) => waiting.set('ended', resolve));
    const answer = await call({ type: 'chat', message: 'message ' + i, stream: true, client_message_id: 'cm-' + i, ...(conversation ? { conversation_id: conversation } : {}) });
    if (answer.status !== 'ok') throw new Error(JSON.stringify(answer));
    if (!followed) { followed = true; await call({ type: 'follow_conversation', conversation_id: conversation }); }
    await ended;
  };
  await chat(0);
  const heap = new Session();
  heap.connect();
  const ask = (method, params) => new Promise((resolve, reject) => heap.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
  await ask('HeapProfiler.enable');
  await ask('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  counting = true;
  const cpu0 = cpuMs();
  for (let i = 1; i <= Number(count); i += 1) await chat(i);
  const cpu = cpuMs() - cpu0;
  counting = false;
  const { profile } = await ask('HeapProfiler.stopSampling');
  const alloc = { ours: 0, double: 0, other: 0, ourSites: {} };
  const walk = (node, owner) => {
    const url = node.callFrame.url || '';
    const here = url.includes(join(tree, 'src')) ? 'ours' : url.includes('/test/helpers/') ? 'double' : owner;
    const self = node.selfSize;
    if (here === 'ours') { const site = (node.callFrame.functionName || '(anonymous)') + ' ' + (url.includes('/src/') ? url.slice(url.lastIndexOf('/src/') + 1) : url.split('/').pop()); alloc.ourSites[site] = (alloc.ourSites[site] || 0) + self; }
    alloc[here] += self;
    for (const child of node.children) walk(child, here);
  };
  walk(profile.head, 'other');
  console.log(JSON.stringify({ counts, cpu, alloc }));
  await ext.deactivate();
  process.exit(0);
})().catch((error) => { console.error(error); process.exit(1); });
`;

interface Run {
  counts: { in: Record<string, number>; batched: Record<string, number>; out: Record<string, number>; posts: number; postBytes: number; postKinds: Record<string, number> };
  cpu: number;
  alloc: { ours: number; double: number; other: number; ourSites: Record<string, number> };
}

const lastUserText = (request: RecordedRequest) => {
  const messages = (request.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const last = [...messages].reverse().find((m) => m.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
};

async function main(): Promise<void> {
  const count = Number(process.env.MESSAGES ?? 40);
  const pieces = Number(process.env.PIECES ?? 20);
  const rounds = Number(process.env.ROUNDS ?? 1);
  const fake = await startFakeOpenAI();
  fake.setDefault((request) => ({ text: `Reply to “${lastUserText(request).slice(-20)}”: ${'a few words of streamed text, '.repeat(8)}end.`, chunks: pieces }));
  const scratch = mkdtempSync(join(tmpdir(), 'ra-bench-stream-'));
  const trees = [...(process.env.A ? [{ name: 'A', tree: resolve(process.env.A) }] : []), { name: 'B', tree: resolve(__dirname, '..') }];
  try {
    const child = join(scratch, 'child.cjs');
    writeFileSync(child, CHILD);
    const double = resolve(__dirname, '..', 'test', 'helpers', 'vscode-double.ts');
    for (let round = 0; round < rounds; round += 1) {
      for (const { name, tree } of round % 2 === 0 ? trees : [...trees].reverse()) {
        const storage = mkdtempSync(join(scratch, 'storage-'));
        const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, double, tree, storage, fake.url, String(count)], { encoding: 'utf8', maxBuffer: 1 << 26 });
        const run = JSON.parse(stdout.trim().split('\n').at(-1)!) as Run;
        const per = (n: number, digits = 1) => fmt(n / count, digits);
        const table = (t: Record<string, number>) =>
          Object.entries(t)
            .sort((a, b) => b[1] - a[1])
            .map(([k, v]) => `${k} ${per(v)}`)
            .join(', ');
        const total = (t: Record<string, number>) => Object.values(t).reduce((a, b) => a + b, 0);
        console.log(`round ${round + 1} ${name} (${tree}), per message of ${pieces} pieces, load ${fmt(loadavg()[0]!, 1)}:`);
        console.log(`  port in ${per(total(run.counts.in))}: ${table(run.counts.in)}`);
        if (Object.keys(run.counts.batched).length) console.log(`  carried in batches ${per(total(run.counts.batched))}: ${table(run.counts.batched)}`);
        console.log(`  port out ${per(total(run.counts.out))}: ${table(run.counts.out)}`);
        console.log(`  webview posts ${per(run.counts.posts)} (${per(run.counts.postBytes, 0)} JSON bytes): ${table(run.counts.postKinds)}`);
        console.log(
          `  main thread CPU ${per(run.cpu, 2)} ms; allocated (sampled) ours ${per(run.alloc.ours / 1024)} KB, the double's ${per(run.alloc.double / 1024)} KB, other ${per(run.alloc.other / 1024)} KB`,
        );
        const sites = Object.entries(run.alloc.ourSites)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 14);
        for (const [site, bytes] of sites) console.log(`    ${fmt(bytes / count / 1024, 2)} KB  ${site}`);
        rmSync(storage, { recursive: true, force: true });
      }
    }
  } finally {
    await fake.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

void main();
