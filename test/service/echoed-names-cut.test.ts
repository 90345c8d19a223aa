// An error text that echoes a client's name (an unknown command type, a relay channel's name) cuts it by
// whole characters: never half a pair, which the error's JSON carries as a lone surrogate's escape (s23, polish23).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commandOf } from '../../src/commands/dispatcher';
import { ServiceError, type ServiceConfig } from '../../src/protocol';
import { createRelayPairing } from '../../src/transport/pairing/relay-pairing';

const PAIR = '\u{1F600}';

test('an unknown command type with a pair astride the 64-character cut is echoed by whole characters', () => {
  const answer = commandOf({ type: `${'x'.repeat(63)}${PAIR}tail`, id: 1 }) as { error: string };
  assert.ok(answer.error.isWellFormed(), JSON.stringify(answer.error.slice(-4)));
  assert.equal(answer.error, `unknown command type: ${'x'.repeat(63)}${PAIR}`);
});

test('an unknown relay channel name with a pair astride the 64-character cut is echoed by whole characters', async () => {
  const deps = { config: () => ({ channels: [] }) as unknown as ServiceConfig, store: undefined as never, pairings: undefined as never, logger: undefined as never };
  const refused = await createRelayPairing(deps, `${'c'.repeat(63)}${PAIR}tail`).then(
    () => undefined,
    (error: unknown) => error,
  );
  assert.ok(refused instanceof ServiceError);
  assert.ok(refused.message.isWellFormed(), JSON.stringify(refused.message.slice(-4)));
  assert.equal(refused.message, `no relay channel named ${'c'.repeat(63)}${PAIR}`);
});
