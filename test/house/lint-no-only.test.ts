// The lint rule against committed focus markers (eslint.config.mjs, docs/design.md "Rules of the house"):
// node:test's `.only` in every spelling is an error in test files, and what merely looks alike is not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ESLint } from 'eslint';

const FOCUSED = [
  "test.only('a', () => {});",
  "describe.only('b', () => {});",
  "it.only('c', () => {});",
  "suite.only('d', () => {});",
  "test('e', (t) => t.test.only('f', () => {}));",
  "test('g', { only: true }, () => {});",
  "describe('h', { only: true }, () => {});",
  "test('i', async (t) => { await t.test('j', { only: true }, () => {}); });",
];
const FINE = ["test('a', { only: false }, () => {});", "test('b', { skip: true }, () => {});", 'const options = { only: true }; void options;', "const words = ['x'].filter((w) => w !== 'only');"];

async function ruleHits(line: string): Promise<number> {
  const eslint = new ESLint({ cwd: process.cwd() });
  const [result] = await eslint.lintText(`import { describe, it, suite, test } from 'node:test';\n${line}\n`, { filePath: 'test/house/probe.test.ts' });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-syntax').length;
}

test('every spelling of a committed .only is a lint error in a test file', { timeout: 60_000 }, async () => {
  for (const line of FOCUSED) assert.equal(await ruleHits(line), 1, line);
});

test('options and names that only look alike are not', { timeout: 60_000 }, async () => {
  for (const line of FINE) assert.equal(await ruleHits(line), 0, line);
});
