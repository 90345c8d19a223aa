// A multi-step tool turn of the editor's service on its thread, two trees A/B: the whole extension from source
// with the `vscode` double (test/helpers/vscode-double.ts) over the real service on its worker thread, the
// model a fake OpenAI server in this process (off the extension host's thread, as a real model is). Each
// turn: STEPS model requests, the first STEPS-1 calling the editor's get_selection, the last answering;
// LM_TOOLS tools of other extensions listed by vscode.lm.tools. Per tree, the medians of: the messages the
// extension host's thread took from and gave to the service's thread per turn (and of them the 'tools.list'
// calls), and the turn's wall per step. BUSY_MS > 0 keeps the extension host's loop busy as other
// extensions do: BUSY_MS of work every 20 ms. The trees take turns, one child process each.
// `A=/path/to/other/tree npx tsx bench/editor-tool-steps.ts` (ROUNDS 6, TURNS 8, STEPS 5, LM_TOOLS 20, BUSY_MS 0).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import type { RecordedRequest } from '../test/helpers/fake-http';
import { fmt, percentile } from './util';

interface Figures {
  messages: number;
  listings: number;
  stepMs: number;
  /** The extension host's thread's CPU time in the turn (its schedstat). */
  mainCpuMs: number;
}

/** One tree's turns, in the child process: argv = double, tree, storage, base_url, turns, lm tools, busy ms. */
const CHILD = `
const [double, tree, storage, baseUrl, turns, lmTools, busyMs] = process.argv.slice(2);
const vscode = require(double);
vscode.installVscodeDouble();
vscode.testing.settings.set('remoteAssistant.port', 0);
const { readFileSync, writeFileSync } = require('node:fs');
const cpuMs = () => Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ', 1)[0]) / 1e6;
const { join } = require('node:path');
writeFileSync(join(storage, 'service.json'), JSON.stringify({ auth_token: 'bench-access-token-0123456789abcdef0123', base_url: baseUrl, model: 'fake-model', permission_mode: 'allow' }));
for (let i = 0; i < Number(lmTools); i += 1) {
  vscode.testing.lmTools.push({ name: 'tool_' + i, description: 'Another extension\\'s tool number ' + i + ', which does a thing with a text and a path.', inputSchema: { type: 'object', properties: { text: { type: 'string', description: 'The text.' }, path: { type: 'string', description: 'A path.' } }, required: ['text'] }, tags: [], invoke: () => ({ content: [] }) });
}
if (Number(busyMs) > 0) setInterval(() => { const end = performance.now() + Number(busyMs); while (performance.now() < end); }, 20).unref();
(async () => {
  const ext = require(join(tree, 'src', 'extension', 'extension.ts'));
  const api = await ext.activate(vscode.fakeContext(storage, tree));
  if (api.hosting.state.state !== 'hosting') throw new Error('not hosting: ' + JSON.stringify(api.hosting.state));
  await api.hosting.service.ready;
  const worker = api.hosting.service.worker;
  let messages = 0, listings = 0;
  worker.on('message', (m) => { messages += 1; if (m.t === 'call' && m.call.method === 'tools.list') listings += 1; });
  const post = worker.postMessage.bind(worker);
  worker.postMessage = (m, ...rest) => { messages += 1; return post(m, ...rest); };
  const turn = async (n) => {
    const began = performance.now();
    const cpu = cpuMs();
    const answer = await api.hosting.backend.request({ type: 'chat', message: 'turn ' + n });
    if (answer.status !== 'ok') throw new Error(JSON.stringify(answer));
    return { ms: performance.now() - began, cpu: cpuMs() - cpu };
  };
  await turn(0);
  const runs = [];
  for (let n = 1; n <= Number(turns); n += 1) {
    messages = 0; listings = 0;
    const { ms, cpu } = await turn(n);
    runs.push({ messages, listings, ms, cpu });
  }
  console.log(JSON.stringify(runs));
  await ext.deactivate();
  process.exit(0);
})().catch((error) => { console.error(error); process.exit(1); });
`;

const toolResults = (request: RecordedRequest) => ((request.body as { messages: { role: string }[] }).messages ?? []).filter((m) => m.role === 'tool').length;

async function main(): Promise<void> {
  const other = process.env.A;
  if (!other) throw new Error('A=<another tree> is required');
  const rounds = Number(process.env.ROUNDS ?? 6);
  const turns = Number(process.env.TURNS ?? 8);
  const steps = Number(process.env.STEPS ?? 5);
  const lmTools = Number(process.env.LM_TOOLS ?? 20);
  const busyMs = Number(process.env.BUSY_MS ?? 0);
  const fake = await startFakeOpenAI();
  const step = (request: RecordedRequest) => (toolResults(request) < steps - 1 ? { tool_calls: [{ name: 'get_selection', arguments: {} }] } : { text: 'done' });
  const scratch = mkdtempSync(join(tmpdir(), 'ra-bench-tool-steps-'));
  try {
    const child = join(scratch, 'child.cjs');
    writeFileSync(child, CHILD);
    const double = resolve(__dirname, '..', 'test', 'helpers', 'vscode-double.ts');
    const trees = [
      { name: 'A', tree: resolve(other), runs: [] as Figures[] },
      { name: 'B', tree: resolve(__dirname, '..'), runs: [] as Figures[] },
    ];
    const loads: number[] = [];
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        50,
      );
    for (let round = 0; round < rounds; round += 1) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        const storage = mkdtempSync(join(scratch, 'storage-'));
        fake.script(...Array.from({ length: (turns + 1) * steps }, () => step));
        // Asynchronous: the fake model answers on this process's loop meanwhile.
        const { stdout: out } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, double, tree.tree, storage, fake.url, String(turns), String(lmTools), String(busyMs)], {
          encoding: 'utf8',
        });
        const runs = JSON.parse(out.trim().split('\n').at(-1)!) as { messages: number; listings: number; ms: number; cpu: number }[];
        const figures = runs.map((r) => ({ messages: r.messages, listings: r.listings, stepMs: r.ms / steps, mainCpuMs: r.cpu }));
        tree.runs.push(...figures);
        const of = (key: keyof Figures) => fmt(median(figures.map((f) => f[key])), 1);
        console.log(`round ${round + 1} ${tree.name}: step ${of('stepMs')} ms, main thread ${of('mainCpuMs')} ms CPU a turn, ${of('messages')} messages (load ${fmt(loadavg()[0]!, 1)})`);
        rmSync(storage, { recursive: true, force: true });
      }
      loads.push(loadavg()[0]!);
    }
    console.log(`${rounds} rounds x ${turns} turns of ${steps} steps, ${lmTools} lm tools, busy ${busyMs} ms / 20 ms; load ${loads.map((l) => fmt(l, 1)).join(' ')}`);
    for (const { name, tree, runs } of trees) {
      const p = (key: keyof Figures, q: number) =>
        percentile(
          runs.map((r) => r[key]).sort((a, b) => a - b),
          q,
        );
      console.log(
        `${name} (${tree}): per turn ${fmt(median(runs.map((r) => r.messages)), 0)} messages, ${fmt(median(runs.map((r) => r.listings)), 0)} tools.list, ` +
          `main thread CPU ${fmt(p('mainCpuMs', 50), 1)} ms (p25 ${fmt(p('mainCpuMs', 25), 1)}, p75 ${fmt(p('mainCpuMs', 75), 1)}); ` +
          `per step ${fmt(p('stepMs', 50), 1)} ms (p25 ${fmt(p('stepMs', 25), 1)}, p75 ${fmt(p('stepMs', 75), 1)})`,
      );
    }
  } finally {
    await fake.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

void main();
