/**
 * Commands with no field but `type` and `id` (get_config, list_tools, ...) are read without zod
 * (protocol/command-frame.ts bareCommandOf, issue 25): a frame an attacker shapes must get the same
 * verdict as zod's parse gave, the same command out (other fields dropped), and over a socket the same
 * error for a bad id.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bareCommandOf, Command, isBareCommand } from '../../src/protocol';
import { command } from '../../src/protocol/command-frame';
import * as z from 'zod';
import { useService } from '../helpers/service-fixture';
import { TestClient } from '../helpers/ws-client';

const bare = Command.options.filter((schema) => isBareCommand(schema));

const ids: unknown[] = [
  undefined,
  0,
  -0,
  7,
  -1.5,
  1e308,
  JSON.parse('1e309'), // Infinity: JSON.parse makes it of a long number
  -Infinity,
  NaN,
  '',
  'a',
  'x'.repeat(128),
  'x'.repeat(129),
  '\u{1F600}'.repeat(64), // 128 UTF-16 units
  '\u{1F600}'.repeat(65),
  null,
  true,
  false,
  [],
  ['a'],
  {},
  { toString: 'x' },
  10n,
];

describe('bare commands without zod', () => {
  test('get_config and the other field-less commands are read this way', () => {
    const types = bare.map((schema) => schema.shape.type.value);
    assert.ok(types.includes('get_config'));
    assert.ok(!types.includes('chat') && !types.includes('update_config'), 'commands with fields are not');
  });

  test('the same verdict and the same command as zod, for every id and extra fields', () => {
    let accepted = 0;
    for (const schema of bare) {
      const type = schema.shape.type.value as string;
      for (const id of ids) {
        for (const extra of [{}, { colour: 'blue', __proto__x: 1, type2: 'chat' }, { constructor: 'x', config: { auth_token: 'x' } }]) {
          const frame: Record<string, unknown> = { ...extra, type };
          if (id !== undefined) frame.id = id;
          const zod = schema.safeParse(frame);
          const ours = bareCommandOf(type, frame);
          // Undefined: zod decides (the dispatcher asks it), so only an accepted frame must agree.
          if (ours === undefined) continue;
          accepted += 1;
          assert.ok(zod.success, `${type} ${String(id)}: accepted only what zod accepts`);
          assert.deepEqual(ours, zod.data, `${type} ${String(id)}: the same command`);
        }
      }
    }
    assert.equal(accepted, bare.length * 3 * 10, 'every plain id (none, the finite numbers, the short strings) without zod');
  });

  test('a schema with a refinement or a rule for other keys is not bare (zod would check more than the id)', () => {
    assert.equal(isBareCommand(command('probe', {})), true);
    assert.equal(isBareCommand(command('probe', {}).strict()), false);
    assert.equal(isBareCommand(command('probe', {}).refine(() => false)), false);
    assert.equal(isBareCommand(command('probe', { field: z.string() })), false);
  });

  test('a command redefining its id or type is not bare (found in review: only the keys were compared, so a rule of its own was skipped)', () => {
    assert.equal(isBareCommand(command('probe', { id: z.string().min(5) })), false);
    assert.equal(isBareCommand(command('probe', { type: z.literal('probe').transform(() => 'other') })), false);
  });
});

const svc = useService({});

describe('a bad id of a bare command over a socket', () => {
  test('is refused with the same error as before, the connection still usable', async () => {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    for (const id of ['x'.repeat(129), true, { a: 1 }, null, [1]]) {
      client.send(JSON.stringify({ type: 'get_config', id }));
      const reply = await client.next((frame) => frame.status === 'error' || frame.status === 'ok');
      assert.equal(reply.status, 'error', JSON.stringify(id));
      assert.equal(reply.id, undefined, 'a refused id is not echoed');
      assert.equal(reply.code, 'invalid_request');
      assert.match(String(reply.error), /^invalid get_config: .*id/);
    }
    const good = await client.request({ type: 'get_config', id: 'x'.repeat(128), colour: 'blue' });
    assert.equal(good.status, 'ok');
    assert.equal(good.id, 'x'.repeat(128));
    client.close();
  });
});
