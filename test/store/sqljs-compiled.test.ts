// sql.js loaded from the module the command line's entry compiled ahead (cli-loader.ts, useCompiledSqlJs):
// a module that cannot be instantiated (its imports do not match sql.js's glue, memory refused) must not
// leave the load pending for ever (sql.js calls instantiateWasm inside a promise nobody rejects): it loads
// from the bytes as without it. A file of its own: the load is kept once per process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadSqlJs, useCompiledSqlJs } from '../../src/store/sqljs';

test('a compiled module that cannot be instantiated: sql.js loads from its bytes instead of never settling', { timeout: 30_000 }, async () => {
  // The smallest module with an import sql.js's glue does not give: instantiating it throws a LinkError.
  const bytes = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x02, 0x07, 0x01, 0x01, 0x78, 0x01, 0x79, 0x00, 0x00]);
  useCompiledSqlJs(new WebAssembly.Module(bytes));
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const outcome = await Promise.race([loadSqlJs().then(() => 'loaded'), new Promise((resolve) => setTimeout(() => resolve('pending after 10 s'), 10_000).unref())]);
    assert.equal(outcome, 'loaded');
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    assert.deepEqual(db.exec('SELECT 1 + 1 AS two')[0]?.values, [[2]]);
    db.close();
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
