import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startService, type RunningService } from '../helpers/service';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const services: RunningService[] = [];
after(async () => {
  for (const svc of services) await svc.dispose();
});

test('no auth frame in time: close 4408', async () => {
  const svc = await startService({}, { authTimeoutMs: 300 });
  services.push(svc);
  const client = await TestClient.connect(svc.wsUrl);
  const closed = await client.waitClose(5_000);
  assert.equal(closed.code, 4408);
  assert.equal(client.frames.length, 0, 'nothing answered on timeout');
});

test('a hand edit of service.json applies live: config.changed to clients, get_config follows', async () => {
  const svc = await startService({ model: 'before-model' });
  services.push(svc);
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  const file = join(svc.dataDir, 'service.json');
  const config = JSON.parse(await readFile(file, 'utf8'));
  await writeFile(file, JSON.stringify({ ...config, model: 'after-model', permission_mode: 'deny' }, null, 2));
  const event = await client.next((f) => f.event === 'config.changed');
  assert.deepEqual([...(event.fields as string[])].sort(), ['model', 'permission_mode']);
  const current = (await client.request({ type: 'get_config' })).data as Record<string, unknown>;
  assert.equal(current.model, 'after-model');
  assert.equal(current.permission_mode, 'deny');

  // An invalid edit is refused: the last good config stays in force and the file is not overwritten.
  await writeFile(file, '{"model": 42');
  await waitFor(async () => (await readFile(join(svc.dataDir, 'service.log'), 'utf8')).includes('config.invalid'), 'the refused edit to be logged');
  assert.equal(((await client.request({ type: 'get_config' })).data as Record<string, unknown>).model, 'after-model');
  assert.equal(await readFile(file, 'utf8'), '{"model": 42');
  client.close();
});
