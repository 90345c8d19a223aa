/**
 * "A service with a fake provider", set up once for the tests that need it: the fake vendor server
 * (fake-openai.ts or fake-anthropic.ts), optionally a temp workspace, and real services (service.ts's
 * startService) whose service.json points at the fake. Everything it starts it also stops, in node:test
 * hooks it registers itself, so a test file has no before/after of its own for these.
 *
 *   const svc = useService({ config: { model: 'fake-model' } });        // one service for the whole file
 *   test('...', async () => { const client = await svc.client(); svc.fake.script({ text: 'hi' }); ... });
 *
 *   const rig = useFakeProvider({ workspace: true });                    // one fake, services as needed
 *   test('...', async () => { const svc = await rig.start({ permission_mode: 'ask' }); ... });
 *
 *   test('...', async (t) => { const svc = await withService(t, { provider: 'anthropic' }); ... });
 */
import { after, before, type TestContext } from 'node:test';
import { startFakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from './fake-anthropic';
import { startFakeOpenAI, type FakeOpenAI, type FakeOpenAIOptions } from './fake-openai';
import { startService, type RunningService } from './service';
import { tempDir } from './temp';
import { TestClient } from './ws-client';

export type FakeVendor = 'openai' | 'anthropic';
export type FakeOf<P extends FakeVendor> = P extends 'anthropic' ? FakeAnthropic : FakeOpenAI;
export type FakeOptionsOf<P extends FakeVendor> = P extends 'anthropic' ? FakeAnthropicOptions : FakeOpenAIOptions;
type Config = Record<string, unknown>;
type LateConfig = Config | (() => Config | Promise<Config>);
/** What a file does once its service runs (a client it keeps...), in the same hook, so before any test. */
type AfterStart<P extends FakeVendor> = (svc: ServiceWithFake<P>) => Promise<void> | void;
/** startService's options (service options, `dataDir`, `keepConfig`). */
export type StartOptions = NonNullable<Parameters<typeof startService>[1]>;

export interface FakeProviderOptions<P extends FakeVendor> {
  /** Which vendor the fake speaks; service.json's `provider`. Default 'openai'. */
  provider?: P;
  /** The fake's own options (a key it demands, the models it lists...). */
  fake?: FakeOptionsOf<P>;
  /** Make a temp directory for the tools and set it as `workspace` in every service.json (unless the config names another). */
  workspace?: boolean;
}

/** A running service whose provider is the fake. */
export interface ServiceWithFake<P extends FakeVendor = 'openai'> extends RunningService {
  readonly fake: FakeOf<P>;
  readonly port: number;
  /** The temp workspace, when the fixture was asked for one. */
  readonly workspace: string;
  /** A WebSocket client authenticated with `token` (default: the access token), closed with the service. */
  client(token?: string): Promise<TestClient>;
}

export interface FakeProviderFixture<P extends FakeVendor> {
  readonly fake: FakeOf<P>;
  readonly workspace: string;
  /** service.json for a service on the fake: provider, base_url and the workspace, then `config` over them. */
  config(config?: Config): Config;
  /** Starts a service on the fake; it is stopped (its temp data directory removed) when the file ends, or `t` when given. */
  start(config?: Config, options?: StartOptions, t?: TestContext): Promise<ServiceWithFake<P>>;
  /**
   * One service for the whole file, started in a `before` hook; the handle answers for it once that ran.
   * node:test starts a file's top-level `before` hooks at once, side by side, so one does not wait for
   * another: `config` may be an (async) function that makes what the service.json names (a webhook
   * receiver...), `options` a function too, and `afterStart` does what needs the running service.
   */
  service(config?: LateConfig, options?: StartOptions | (() => StartOptions), afterStart?: AfterStart<P>): ServiceWithFake<P>;
}

/** Where a fixture's parts are, once started. */
class Parts<P extends FakeVendor> {
  fake?: FakeOf<P>;
  workspace?: { dir: string; cleanup(): Promise<void> };
  readonly disposals: (() => Promise<unknown> | void)[] = [];
  private opening?: Promise<void>;

  constructor(private readonly options: FakeProviderOptions<P>) {}

  /** Starts the fake (and workspace) once; every later call waits for that one start. */
  open(): Promise<void> {
    this.opening ??= this.openOnce();
    return this.opening;
  }

  private async openOnce(): Promise<void> {
    this.fake = (await (this.options.provider === 'anthropic' ? startFakeAnthropic(this.options.fake as FakeAnthropicOptions) : startFakeOpenAI(this.options.fake as FakeOpenAIOptions))) as FakeOf<P>;
    if (this.options.workspace) this.workspace = await tempDir('ra-workspace-');
  }

  /** Stops what was started, latest first; the fake and the workspace last. */
  async close(): Promise<void> {
    await this.opening?.catch(() => {});
    for (const dispose of this.disposals.splice(0).reverse()) await dispose();
    await this.fake?.close();
    await this.workspace?.cleanup();
  }

  ready(): FakeOf<P> {
    if (!this.fake) throw new Error('the fake provider is not started yet: use it inside a test or a hook registered after the fixture');
    return this.fake;
  }

  config(config: Config = {}): Config {
    return { provider: this.options.provider ?? 'openai', base_url: this.ready().url, ...(this.workspace && { workspace: this.workspace.dir }), ...config };
  }

  async start(config: Config, options: StartOptions, onDispose: (dispose: () => Promise<void>) => void): Promise<ServiceWithFake<P>> {
    await this.open();
    const running = await startService(this.config(config), options);
    const clients: TestClient[] = [];
    const dispose = async () => {
      for (const client of clients) client.close();
      await running.dispose();
    };
    onDispose(dispose);
    return {
      ...running,
      dispose,
      fake: this.ready(),
      port: Number(new URL(running.httpUrl).port),
      workspace: this.workspace?.dir ?? '',
      client: async (token = running.token) => {
        const client = await TestClient.authed(running.wsUrl, token);
        clients.push(client);
        return client;
      },
    };
  }
}

/** One fake provider (and workspace) for the whole test file: started in `before`, closed in `after`, with every service started on it. */
export function useFakeProvider<P extends FakeVendor = 'openai'>(options: FakeProviderOptions<P> = {}): FakeProviderFixture<P> {
  const parts = new Parts(options);
  before(() => parts.open());
  after(() => parts.close());
  const fixture: FakeProviderFixture<P> = {
    get fake() {
      return parts.ready();
    },
    get workspace() {
      parts.ready();
      if (!parts.workspace) throw new Error('this fixture has no workspace: pass { workspace: true }');
      return parts.workspace.dir;
    },
    config: (config) => parts.config(config),
    start: (config = {}, startOptions = {}, t) => parts.start(config, startOptions, (dispose) => (t ? t.after(dispose) : parts.disposals.push(dispose))),
    service(config = {}, startOptions = {}, afterStart) {
      let running: ServiceWithFake<P> | undefined;
      before(async () => {
        await parts.open();
        const made = typeof config === 'function' ? await config() : config;
        const started = await fixture.start(made, typeof startOptions === 'function' ? startOptions() : startOptions);
        await afterStart?.(started);
        running = started;
      });
      return lateHandle(() => running, 'the service');
    },
  };
  return fixture;
}

/** A fake provider and one service on it for the whole test file (useFakeProvider(options).service(...)). */
export function useService<P extends FakeVendor = 'openai'>(
  options: FakeProviderOptions<P> & { config?: LateConfig; options?: StartOptions | (() => StartOptions); afterStart?: AfterStart<P> } = {},
): ServiceWithFake<P> {
  return useFakeProvider(options).service(options.config, options.options, options.afterStart);
}

/** A fake provider and a service on it for one test, both stopped when `t` ends. */
export async function withService<P extends FakeVendor = 'openai'>(t: TestContext, options: FakeProviderOptions<P> & { config?: Config; options?: StartOptions } = {}): Promise<ServiceWithFake<P>> {
  const parts = new Parts(options);
  t.after(() => parts.close());
  await parts.open();
  return parts.start(options.config ?? {}, options.options ?? {}, (dispose) => parts.disposals.push(dispose));
}

/**
 * An object standing for one made in a `before` hook: reading a field before the hook ran is an error
 * that says so. (A Proxy, so the handle has every field of the real one, RunningService's included.)
 */
function lateHandle<T extends object>(current: () => T | undefined, what: string): T {
  const get = (): T => {
    const value = current();
    if (!value) throw new Error(`${what} is not started yet: use it inside a test or a hook registered after the fixture`);
    return value;
  };
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(get(), key),
    has: (_, key) => Reflect.has(get(), key),
    ownKeys: () => Reflect.ownKeys(get()),
    getOwnPropertyDescriptor: (_, key) => Reflect.getOwnPropertyDescriptor(get(), key),
  });
}
