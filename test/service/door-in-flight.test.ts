/**
 * The door counts the commands in flight (a count, not a set of promises: issue 25's per-command cost):
 * graceful stop's settled() must still wait for every one, those arriving while it waits included, and
 * a command that fails is counted out as one that succeeds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SessionDoor } from '../../src/commands/door';
import type { EventHub } from '../../src/commands/event-hub';
import { ok, type Envelope } from '../../src/protocol';

function doorWithManualDispatch() {
  const pending: { resolve: (envelope: Envelope) => void; reject: (error: Error) => void }[] = [];
  const door = new SessionDoor({
    dispatch: () => new Promise<Envelope>((resolve, reject) => pending.push({ resolve, reject })),
    events: { add: () => () => undefined } as unknown as EventHub,
  });
  const session = door.openSession({ source: { kind: 'lan' }, canAnswerPermissions: false, send: () => undefined });
  return { door, session, pending };
}

test('settled() waits for every command in flight, one arriving while it waits included, and failures count out', async () => {
  const { door, session, pending } = doorWithManualDispatch();
  await door.settled();
  const first = session.request({ type: 'get_config' });
  const second = session.request({ type: 'get_config' });
  assert.equal(door.inFlightCount, 2);
  let settled = false;
  const waiting = door.settled().then(() => (settled = true));
  pending[0]!.resolve(ok({ a: 1 }));
  await first;
  assert.equal(door.inFlightCount, 1);
  const third = session.request({ type: 'get_config' });
  pending[1]!.reject(new Error('handler crashed'));
  await assert.rejects(second);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false, 'the command that arrived while waiting is still in flight');
  assert.equal(door.inFlightCount, 1);
  pending[2]!.resolve(ok({ c: 3 }));
  await third;
  await waiting;
  assert.equal(settled, true);
  assert.equal(door.inFlightCount, 0);
});

test('tracked work that is not a command is counted the same way', async () => {
  const { door, session } = doorWithManualDispatch();
  let finish!: () => void;
  const work = session.track(new Promise<void>((resolve) => (finish = resolve)));
  assert.equal(door.inFlightCount, 1);
  let settled = false;
  const waiting = door.settled().then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false);
  finish();
  await work;
  await waiting;
  assert.equal(door.inFlightCount, 0);
});
