// A refusal made after history.db's open wrote (its sync mark): "missing message bodies", found once the
// sync-mark check has run (history.db replaced by an older copy). It must say what is true of what the
// open changed, and change nothing a later open of the right file would need.
import assert from 'node:assert/strict';
import { copyFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { HISTORY_FILE_NAME, openStore } from '../../src/store/index';
import type { NewMessage } from '../../src/store/index';
import { tempDir } from '../helpers/store-utils';

const message = (i: number): NewMessage => ({ id: `m${i}`, conversation_id: 'c', role: i % 2 === 0 ? 'user' : 'assistant', content: `message ${i}`, timestamp: new Date(1000 + i).toISOString() });

test(
  'history.db replaced by an older copy (its sync mark behind, messages moved out of sql.js since): the refusal says what the open wrote, and the right file put back opens with every message counted',
  { timeout: 90_000 },
  async (t) => {
    const { dir, cleanup } = await tempDir('history-refused-after-begin-');
    t.after(cleanup);
    const file = path.join(dir, HISTORY_FILE_NAME);
    let store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
    await store.conversations.create({ id: 'c', title: 'c', source: 'ws', created_at: new Date(0).toISOString() });
    await store.messages.append(message(0));
    await store.close();
    const older = path.join(dir, 'older-copy');
    await copyFile(file, older);

    // Later messages, every one's metadata then moved to history.db (cold): the older copy has none of them.
    store = await openStore(dir, { maintenanceIntervalMs: 3_600_000, hotMessages: 0 });
    for (let i = 1; i < 6; i++) await store.messages.append(message(i));
    await store.maintenance.run();
    // One more, its metadata still in sql.js: its body's key is past the older copy's end (refused).
    await store.messages.append(message(6));
    assert.equal(store.messages.count('c'), 7);
    await store.close();
    const right = path.join(dir, 'right-copy');
    await copyFile(file, right);

    await rm(`${file}-wal`, { force: true });
    await copyFile(older, file);
    const refused = await openStore(dir, { maintenanceIntervalMs: 3_600_000 }).then(
      async (opened) => {
        await opened.close();
        return undefined;
      },
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    assert.ok(refused, 'the open is refused');
    assert.match(refused, /missing message bodies that were acknowledged/);
    // history.db's open wrote its sync mark before the check: "nothing was changed" would be false.
    assert.doesNotMatch(refused, /nothing was changed/);
    assert.match(refused, /no message.*was changed.*sync mark/s);

    // The operator puts the right file back: it opens, every message there and counted (the refused open
    // lowered no conversation's count to what the older copy held).
    await rm(`${file}-wal`, { force: true });
    await copyFile(right, file);
    store = await openStore(dir, { maintenanceIntervalMs: 3_600_000 });
    t.after(() => store.close());
    assert.equal(await store.problem(), null);
    assert.equal(store.messages.count('c'), 7);
    assert.deepEqual(
      (await store.messages.recent('c', { limit: 100 })).map((m) => m.content),
      Array.from({ length: 7 }, (_, i) => `message ${i}`),
    );
  },
);
