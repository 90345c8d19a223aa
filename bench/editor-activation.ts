// The editor's activation (activate() -> listening) of two builds, without the editor: each build's
// dist/extension.js is required and activated with the `vscode` double (test/helpers/vscode-double.ts) in
// a fresh Node process over a new global storage holding a service.json (as a window that ran before),
// the builds taking turns so the machine's load falls on both alike. Per build, the medians of: loading
// the bundle (VS Code's "code loading"), the activation (the extension's own figure), activate()'s
// promise, and the store open after it. The e2e (test/e2e/editor.test.ts) gives the same figure in a
// real VS Code; this one is quick enough for an A/B.
// `A=/path/to/other/worktree npx tsx bench/editor-activation.ts` (ROUNDS, default 10). Build both first
// (`node esbuild.mjs --production`: the .vsix's build).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { fmt, percentile } from './util';

interface Figures {
  loadMs: number;
  activationMs: number;
  activateCallMs: number;
  readyMs: number;
}

/** One activation, in the child process: argv = double, extension.js, global storage. */
const CHILD = `
const [double, bundle, storage] = process.argv.slice(2);
const vscode = require(double);
vscode.installVscodeDouble();
vscode.testing.settings.set('remoteAssistant.port', 0);
require('node:fs').writeFileSync(require('node:path').join(storage, 'service.json'), JSON.stringify({ auth_token: 'bench-access-token-0123456789abcdef0123', model: 'm' }, null, 2));
(async () => {
  const loading = performance.now();
  const ext = require(bundle);
  const loadMs = performance.now() - loading;
  const called = performance.now();
  const api = await ext.activate(vscode.fakeContext(storage, require('node:path').dirname(bundle)));
  const activateCallMs = performance.now() - called;
  await api.hosting.service.ready;
  const readyMs = performance.now() - called;
  if (api.hosting.state.state !== 'hosting') throw new Error('not hosting: ' + JSON.stringify(api.hosting.state));
  console.log(JSON.stringify({ loadMs, activationMs: api.activationMs, activateCallMs, readyMs }));
  await ext.deactivate();
  process.exit(0);
})().catch((error) => { console.error(error); process.exit(1); });
`;

function main(): void {
  const other = process.env.A;
  if (!other) throw new Error('A=<another worktree, built> is required');
  const rounds = Number(process.env.ROUNDS ?? 10);
  const scratch = mkdtempSync(join(tmpdir(), 'ra-bench-activation-'));
  try {
    const double = join(scratch, 'vscode-double.js');
    buildSync({ entryPoints: [resolve(__dirname, '..', 'test', 'helpers', 'vscode-double.ts')], outfile: double, bundle: true, platform: 'node', format: 'cjs', logLevel: 'warning' });
    const child = join(scratch, 'child.cjs');
    writeFileSync(child, CHILD);
    const builds = [
      { name: 'A', bundle: join(resolve(other), 'dist', 'extension.js'), runs: [] as Figures[] },
      { name: 'B', bundle: resolve(__dirname, '..', 'dist', 'extension.js'), runs: [] as Figures[] },
    ];
    const loads: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
        const storage = mkdtempSync(join(scratch, 'storage-'));
        const out = execFileSync(process.execPath, [child, double, build.bundle, storage], { encoding: 'utf8' });
        build.runs.push(JSON.parse(out.trim().split('\n').at(-1)!) as Figures);
        rmSync(storage, { recursive: true, force: true });
      }
      loads.push(loadavg()[0]!);
    }
    const median = (values: number[]) =>
      percentile(
        [...values].sort((a, b) => a - b),
        50,
      );
    for (const { name, bundle, runs } of builds) {
      const of = (key: keyof Figures) => fmt(median(runs.map((r) => r[key])), 0);
      console.log(
        `${name} (${bundle}), medians of ${runs.length}: activation ${of('activationMs')} ms (each: ${runs.map((r) => r.activationMs).join(' ')}), ` +
          `loading the bundle ${of('loadMs')} ms, activate() ${of('activateCallMs')} ms, store open at ${of('readyMs')} ms`,
      );
    }
    console.log(`load average during the rounds: ${fmt(Math.min(...loads), 1)}-${fmt(Math.max(...loads), 1)}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main();
