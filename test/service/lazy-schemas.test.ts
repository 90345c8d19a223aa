/**
 * The protocol's schemas are built when first used, not when the modules load (protocol/lazy-schema.ts,
 * issue 25's start): a start and a client's first commands build the schemas they use and no other, and
 * a lazily built schema is indistinguishable from the schema itself to the code using it; the warm-up
 * after listening builds the rest. Each test file
 * is its own process, so what is built here is what this file's service built.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as z from 'zod';
import { AuthCommand, ChatCommand, Command, CommandResults, GetConfigCommand, PublicConfig, ServiceEvent } from '../../src/protocol';
import { buildLazySchemas, lazySchema, schemaBuilt } from '../../src/protocol/lazy-schema';
import { LandChangesCommand } from '../../src/protocol/worktrees';
import { startService, type RunningService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

describe('a lazy schema', () => {
  test('is built at its first touch, once, and then behaves as the schema it builds', () => {
    let builds = 0;
    const Point = lazySchema(() => {
      builds += 1;
      return z.object({ x: z.number(), y: z.number().optional() });
    });
    // Declared, used in another's declaration, not touched: nothing built.
    const Line = lazySchema(() => z.object({ from: Point, to: Point }));
    assert.equal(builds, 0);
    assert.equal(schemaBuilt(Point), false);
    assert.deepEqual(Line.parse({ from: { x: 1 }, to: { x: 2, y: 3, z: 4 } }), { from: { x: 1 }, to: { x: 2, y: 3 } });
    assert.equal(builds, 1);
    assert.equal(schemaBuilt(Point), true);
    assert.ok(Point instanceof z.ZodObject);
    assert.deepEqual(Object.keys(Point.shape), ['x', 'y']);
    assert.equal(Point.safeParse({ x: 'no' }).success, false);
    assert.equal(Point.optional().parse(undefined), undefined);
    assert.deepEqual(Point.extend({ z: z.number() }).parse({ x: 1, z: 2 }), { x: 1, z: 2 });
    assert.equal(builds, 1);
    assert.equal(schemaBuilt({}), undefined);
  });

  test('a record of schemas spreads and lists like the record', () => {
    const Figures = lazySchema(() => ({ tokens: z.number().int(), replies: z.number().int() }));
    const Usage = z.object({ ...Figures, model: z.string() });
    assert.deepEqual(Object.keys(Usage.shape), ['tokens', 'replies', 'model']);
    assert.deepEqual(Usage.parse({ tokens: 1, replies: 2, model: 'm' }), { tokens: 1, replies: 2, model: 'm' });
  });

  test('a schema whose build uses itself says so instead of recursing', () => {
    const Self: z.ZodObject = lazySchema(() => z.object({ again: Self.optional() }));
    assert.throws(() => Self.parse({}), /used while it was being built/);
  });
});

describe('a start, its first commands and its warm-up', () => {
  let svc: RunningService;
  let builtAtListening: Record<string, boolean | undefined>;
  let reached!: Promise<void>;
  let release!: () => void;
  const built = () => ({
    auth: schemaBuilt(AuthCommand),
    get_config: schemaBuilt(GetConfigCommand),
    chat: schemaBuilt(ChatCommand),
    land_changes: schemaBuilt(LandChangesCommand),
    union: schemaBuilt(Command),
    results: schemaBuilt(CommandResults),
    events: schemaBuilt(ServiceEvent),
    public_config: schemaBuilt(PublicConfig),
  });

  before(async () => {
    let reachedIt!: () => void;
    reached = new Promise<void>((resolve) => (reachedIt = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    // The warm-up's practice is held where it asks its provider: the schemas it builds after it wait too.
    svc = await startService({}, { holdPractice: () => (reachedIt(), released) });
    builtAtListening = built();
  });
  after(async () => {
    release?.();
    await svc?.dispose();
  });

  test('a start builds no command schema', () => {
    assert.deepEqual(builtAtListening, { auth: false, get_config: false, chat: false, land_changes: false, union: false, results: false, events: false, public_config: false });
  });

  test("auth and get_config build their own schemas and not the other commands', the union's, the results' or the events'", async () => {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      const config = await client.request({ type: 'get_config' });
      assert.equal(config.status, 'ok');
      await reached;
      // The practice's own chat frame went through the dispatcher's check: chat's schema, no other.
      assert.deepEqual(built(), { auth: true, get_config: true, chat: true, land_changes: false, union: false, results: false, events: false, public_config: false });
      // A command of a type not sent before is parsed by its schema, built now: its errors are zod's, as always.
      const refused = await client.request({ type: 'land_changes', conversation_id: 'c', method: 'sideways' });
      assert.equal(refused.status, 'error');
      assert.match(String(refused.error), /^invalid land_changes: method: /);
      assert.equal(schemaBuilt(LandChangesCommand), true);
      assert.equal(schemaBuilt(Command), false);
    } finally {
      client.close();
    }
  });

  test('once the practice is over, the warm-up builds every schema left, and says it is whole', async () => {
    release();
    assert.equal(await svc.service.warmedUp, true);
    assert.deepEqual(built(), { auth: true, get_config: true, chat: true, land_changes: true, union: true, results: true, events: true, public_config: true });
    assert.equal(buildLazySchemas(1), false);
  });
});
