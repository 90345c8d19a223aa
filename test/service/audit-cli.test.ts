// The audit log through the real command line (dist/cli.js, `npm run build` first): a row edited or
// removed in the database of a stopped `serve` is reported by verify_audit after the next start, and a
// backup holds the log, whose restore adds a `restore` entry by the command line.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { AuditEntry } from '../../src/protocol';
import { tamperWithStore } from '../helpers/audit-tamper';
import { runCli, serve, type ServeProcess } from '../helpers/cli';
import { TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 90_000 };

async function newDir(t: TestContext): Promise<string> {
  const temp = await tempDir('ra-audit-cli-');
  t.after(temp.cleanup);
  return temp.dir;
}

async function owner(proc: ServeProcess): Promise<TestClient> {
  return TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
}

async function stop(proc: ServeProcess): Promise<void> {
  proc.child.kill('SIGTERM');
  assert.equal((await proc.exited).code, 0);
}

function ok(reply: Record<string, unknown>): Record<string, unknown> {
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data as Record<string, unknown>;
}

/** A served data directory with four audit entries (config changes by the owner). */
async function withEntries(t: TestContext): Promise<string> {
  const dir = await newDir(t);
  await writeConfig(dir, {});
  const proc = await serve(dir);
  const client = await owner(proc);
  for (const mode of ['allow', 'deny', 'ask']) ok(await client.request({ type: 'update_config', config: { permission_mode: mode } }));
  ok(await client.request({ type: 'update_config', config: { temperature: 0.1 } }));
  assert.deepEqual(ok(await client.request({ type: 'verify_audit' })), { ok: true, entries: 4, first_bad_seq: null, reason: null });
  client.close();
  await stop(proc);
  return dir;
}

async function verifyAfterRestart(dir: string) {
  const proc = await serve(dir);
  const client = await owner(proc);
  try {
    return ok(await client.request({ type: 'verify_audit' }));
  } finally {
    client.close();
    await stop(proc);
  }
}

const tampering = [
  { what: 'edited', sql: 'UPDATE audit_log SET detail = \'{"mode_from":"ask","mode_to":"ask"}\' WHERE seq = 1', bad: 1 },
  { what: 'removed', sql: 'DELETE FROM audit_log WHERE seq = 2', bad: 2 },
];
for (const { what, sql, bad } of tampering) {
  test(`a row ${what} in the stopped service's database is reported by verify_audit after the restart`, LIMIT, async (t) => {
    const dir = await withEntries(t);
    await tamperWithStore(dir, sql);
    const verdict = await verifyAfterRestart(dir);
    assert.equal(verdict.ok, false);
    assert.equal(verdict.first_bad_seq, bad, String(verdict.reason));
  });
}

test('a backup taken by the CLI holds the log; the restore adds an entry by the command line; the chain verifies', LIMIT, async (t) => {
  const dir = await withEntries(t);
  const proc = await serve(dir);
  const client = await owner(proc);
  const dest = join(await newDir(t), 'backup');
  const backedUp = await runCli(['backup', '--data-dir', dir, dest]);
  assert.equal(backedUp.code, 0, backedUp.stderr);
  const entries = ok(await client.request({ type: 'list_audit' })).entries as AuditEntry[];
  assert.equal(entries[0].kind, 'backup', 'the running service records the backup it wrote');
  assert.deepEqual(entries[0].person, { kind: 'owner', name: 'access token' });
  client.close();
  await stop(proc);

  const restoredDir = join(await newDir(t), 'restored');
  const restored = await runCli(['restore', dest, '--data-dir', restoredDir]);
  assert.equal(restored.code, 0, restored.stderr);
  const again = await serve(restoredDir);
  const reader = await owner(again);
  try {
    const after = ok(await reader.request({ type: 'list_audit' })).entries as AuditEntry[];
    assert.deepEqual(
      after.map((e) => e.kind),
      ['restore', 'config.changed', 'mode.changed', 'mode.changed', 'mode.changed'],
    );
    assert.deepEqual(after.slice(1), entries.slice(1), 'the entries before the backup, unchanged');
    assert.deepEqual(after[0].person, { kind: 'cli', name: 'command line' });
    assert.equal(after[0].detail.backup, dest);
    assert.deepEqual(ok(await reader.request({ type: 'verify_audit' })), { ok: true, entries: 5, first_bad_seq: null, reason: null });
  } finally {
    reader.close();
    await stop(again);
  }
});
