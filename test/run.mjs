// Runs every test file with node's test runner (TypeScript through tsx). Each file is its own
// process; a per-test timeout (240 s: a file of many store opens took 107 s alone on a loaded 2-core machine) keeps a stuck test from hanging CI. The end-to-end suites (test/e2e/:
// a real VS Code and Chromium) run after the others, alone, so they neither starve nor are starved by
// the timing-sensitive tests. `node test/run.mjs <files>` runs just those files.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const only = process.argv.slice(2);
/** Every `*.test.ts` below `dir` (tests are grouped by area: test/agent/, test/store/...), e2e and helpers aside. */
const testsIn = (dir, skip = []) =>
  readdirSync(dir, { recursive: true })
    .filter((f) => f.endsWith('.test.ts') && !skip.some((s) => f.startsWith(`${s}/`)))
    .sort()
    .map((f) => `${dir}/${f}`);
const files = only.length > 0 ? only : testsIn('test', ['e2e', 'helpers']);
const e2e = only.length > 0 ? [] : testsIn('test/e2e');

function run(list, timeoutMs, concurrency) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-timeout=${timeoutMs}`, `--test-concurrency=${concurrency}`, ...list], {
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'test' },
  });
  return result.status ?? 1;
}

let status = run(files, 240_000, 2);
if (e2e.length > 0) status = run(e2e, 600_000, 1) || status;
process.exit(status);
