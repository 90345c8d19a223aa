// Runs every test file with node's test runner (TypeScript through tsx). Each file is its own
// process; a per-test timeout keeps a stuck test from hanging CI.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const only = process.argv.slice(2);
const files = only.length > 0
  ? only
  : readdirSync('test').filter((f) => f.endsWith('.test.ts')).sort().map((f) => `test/${f}`);
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=120000', '--test-concurrency=2', ...files], {
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'test' },
});
process.exit(result.status ?? 1);
