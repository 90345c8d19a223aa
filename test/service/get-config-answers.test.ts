import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { envelopeText, fail, ok, sharedResult } from '../../src/protocol';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';

// get_config's answer is one shared object while nothing in it changes, its text made once: each
// answer must still carry its own request's id and see every change at once.

const svc = useService({ workspace: true, config: { model: 'fake-model' } });

describe('get_config answers shared between calls', () => {
  test('each reply carries its own id; a config change or a new instruction file is seen at the next call', async () => {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const first = await client.request({ type: 'get_config', id: 'one' });
    const second = await client.request({ type: 'get_config', id: 2 });
    assert.equal(first.id, 'one');
    assert.equal(second.id, 2);
    assert.deepEqual(second.data, first.data);
    assert.deepEqual((first.data as { instructions: unknown[] }).instructions, []);

    // Without an id the whole reply is one kept text (and frame): a change is still in the very next one.
    const bare = async () => {
      client.send({ type: 'get_config' });
      const reply = await client.next((frame) => 'status' in frame && !('id' in frame));
      assert.equal(reply.status, 'ok');
      return reply.data as { model: string; permission_mode: string; instructions: { path: string; bytes: number }[] };
    };
    assert.deepEqual(await bare(), first.data);
    assert.deepEqual(await bare(), first.data);
    assert.equal((await client.request({ type: 'update_config', config: { model: 'other-model' } })).status, 'ok');
    assert.equal((await bare()).model, 'other-model');
    assert.equal((await client.request({ type: 'update_config', config: { permission_mode: 'deny' } })).status, 'ok');
    assert.equal((await bare()).permission_mode, 'deny');
    assert.equal(((await client.request({ type: 'get_config' })).data as { permission_mode: string }).permission_mode, 'deny');
    await writeFile(join(svc.workspace, 'AGENTS.md'), 'house rules\n');
    assert.deepEqual(
      (await bare()).instructions.map((file) => [file.path, file.bytes]),
      [['AGENTS.md', 12]],
    );
    const withFile = (await client.request({ type: 'get_config' })).data as { instructions: { path: string; bytes: number }[] };
    assert.deepEqual(
      withFile.instructions.map((file) => [file.path, file.bytes]),
      [['AGENTS.md', 12]],
    );
    await rm(join(svc.workspace, 'AGENTS.md'));
    assert.deepEqual((await bare()).instructions, []);
    assert.deepEqual(((await client.request({ type: 'get_config' })).data as { instructions: unknown[] }).instructions, []);
    client.close();
  });
});

describe('envelopeText', () => {
  test('is what JSON.stringify makes, for shared results and others', () => {
    const shared = sharedResult({ a: 1, nested: { b: ['x', 'é"\\'] } });
    for (const envelope of [ok(shared), ok(shared, 'id-1'), ok(shared, 7), ok({ fresh: true }, 'x'), fail('invalid_request', 'bad "frame"', 'r')]) {
      assert.equal(envelopeText(envelope), JSON.stringify(envelope));
    }
  });
});
