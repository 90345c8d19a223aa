// Issue 20, the editor's part: "Remote Assistant: Show Activity". The whole extension is activated with
// the `vscode` double over the real service (temp dirs, loopback); a LAN socket with the access token
// stands in for another client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ActivityItem } from '../../src/extension/show-activity';
import { extensionHarness } from '../helpers/extension-harness';
import { TEST_TOKEN } from '../helpers/service';
import { waitFor } from '../helpers/temp';
import { testing, type FakeQuickPick } from '../helpers/vscode-double';
import { TestClient } from '../helpers/ws-client';

const harness = extensionHarness();
const cleanups = harness.cleanups;
/** Loaded once the double stands in for `vscode` (extensionHarness installs it). */
const showActivity = async (...args: Parameters<typeof import('../../src/extension/show-activity').showActivity>) => (await import('../../src/extension/show-activity')).showActivity(...args);

async function activateWindow() {
  const { api, port } = await harness.activate({ permission_mode: 'ask' });
  const lan = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, TEST_TOKEN);
  cleanups.push(async () => lan.close());
  return { api, lan };
}

/** The quick pick the command opened, once it shows its rows. */
async function shownPick(): Promise<FakeQuickPick<ActivityItem>> {
  await waitFor(() => testing.createdQuickPicks.at(-1)?.visible === true && testing.createdQuickPicks.at(-1)!.items.length > 0, 'the activity quick pick');
  return testing.createdQuickPicks.at(-1)!;
}

const entryRows = (pick: FakeQuickPick<ActivityItem>) => pick.items.filter((item) => item.entry);

test('Show Activity lists what the editor and a LAN client did, newest first, under the verify result', async () => {
  const { lan } = await activateWindow();
  await testing.commands.get('remoteAssistant.cyclePermissionMode')!();
  assert.equal((await lan.request({ type: 'update_config', config: { temperature: 0.3 } })).status, 'ok');

  const done = testing.commands.get('remoteAssistant.showActivity')!();
  const pick = await shownPick();
  assert.equal(pick.title, 'Remote Assistant: Activity');
  assert.match(pick.items[0].label, /^\$\(verified\) Record verified \(\d+ entries\)$/);
  const rows = entryRows(pick);
  const mode = rows.find((row) => row.entry!.kind === 'mode.changed');
  const config = rows.find((row) => row.entry!.kind === 'config.changed');
  assert.ok(mode && config, JSON.stringify(rows.map((r) => r.label)));
  assert.match(mode.description!, /editor/, 'the editor changed the mode');
  assert.match(config.description!, /LAN 127\.0\.0\.1/, 'the LAN client changed the temperature');
  assert.match(config.detail!, /Settings changed · .* · #\d+/);
  assert.match(config.detail!, /temperature/, 'the field by name');
  assert.ok(rows.indexOf(config) < rows.indexOf(mode), 'newest first');
  assert.ok(pick.matchOnDescription && pick.matchOnDetail, 'typing filters by who, where and kind too');
  assert.equal(
    pick.items.some((item) => item.older),
    false,
    'everything fits one page',
  );
  pick.hide();
  await done;
  assert.equal(pick.disposed, true);
  assert.deepEqual(
    testing.messages.filter((m) => m.kind === 'error'),
    [],
  );
});

test('Load older… pages back until the first entry, and the focus goes to the first of the older rows', async () => {
  const { api, lan } = await activateWindow();
  for (const temperature of [0.1, 0.2, 0.3, 0.4, 0.5]) assert.equal((await lan.request({ type: 'update_config', config: { temperature } })).status, 'ok');
  const done = showActivity(api.hosting.backend, 2);
  const pick = await shownPick();
  assert.equal(entryRows(pick).length, 2);
  for (;;) {
    const older = pick.items.findIndex((item) => item.older);
    if (older < 0) break;
    const before = entryRows(pick).length;
    pick.accept(older);
    await waitFor(() => entryRows(pick).length > before, 'older rows');
    assert.equal(pick.activeItems[0], entryRows(pick)[before], 'focus on the first row loaded');
  }
  const seqs = entryRows(pick).map((row) => row.entry!.seq);
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => b - a),
  );
  assert.equal(new Set(seqs).size, seqs.length);
  assert.equal(seqs.at(-1), 1);
  assert.ok(seqs.length >= 5);
  pick.hide();
  await done;
});

test('Show Activity without the service says so', async () => {
  await assert.rejects(showActivity(undefined), /not running/);
});
