// An audit entry whose text holds a lone surrogate (a webhook's tool run names a path the model chose)
// verifies, live and after a restart: it is hashed as sql.js reads it back (review20b: verify() called it
// changed, for good, which also hid any real change after it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

test('an audit entry with a lone surrogate in its summary, name and address verifies live and after a restart', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('audit-surrogate-');
  t.after(cleanup);
  let store = await openStore(dir);
  await store.db.write(
    (tx) =>
      void store.audit.record(tx, {
        kind: 'webhook.tool_run',
        person: { kind: 'webhook', name: 'acct \udc00' },
        place: { via: 'webhook', address: '10.0.0.1 \ud800' },
        summary: 'Ran read_file \ud800.txt',
      }),
  );
  t.after(() => store.close().catch(() => undefined));
  const live = await store.audit.verify();
  assert.deepEqual([live.ok, live.entries, live.reason], [true, 1, null]);
  await store.close();
  store = await openStore(dir);
  const after = await store.audit.verify();
  assert.deepEqual([after.ok, after.entries, after.reason], [true, 1, null]);
});
