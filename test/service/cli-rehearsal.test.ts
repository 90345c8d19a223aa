// The build's rehearsal of a start (src/cli-rehearsal.ts), run before the bundle's code cache is written
// so that the cache holds the functions a start runs: a real service in a temporary data directory on a
// loopback port, a WebSocket's auth and get_config answered, the warm-up over, then a streamed chat answered
// by a canned server of its own on loopback (since s16: the cache holds a client's first chat's path too),
// and nothing left behind.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { rehearseStart } from '../../src/cli-rehearsal';

const rehearsalDirs = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('ra-rehearsal-'));

test("the rehearsal answers a client's auth and get_config, waits for the whole warm-up, answers a chat, and removes its data directory", async () => {
  const before = new Set(await rehearsalDirs());
  const rehearsal = await rehearseStart();
  assert.deepEqual(rehearsal, { answered: ['auth', 'get_config', 'chat'], warmedUp: true });
  assert.deepEqual(
    (await rehearsalDirs()).filter((name) => !before.has(name)),
    [],
  );
});
