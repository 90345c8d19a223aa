import type { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { Agent, type ProviderResolver } from './agent/agent';
import type { Host } from './agent/host';
import { ConversationActivity } from './agent/conversation-activity';
import { PermissionBroker } from './agent/permission-broker';
import { finishInterruptedRequests } from './agent/permission-restart';
import { PermissionGate } from './agent/permissions';
import { addAllowRule } from './config/permission-rules';
import { createProviderResolver } from './agent/provider-resolver';
import { practiceProvider, providerWarmUp } from './agent/providers/registry';
import { mcpSdk } from './agent/tools/mcp-sdk';
import { createPracticeToolRegistry, createToolRegistry, workspaceRootsOf } from './agent/toolbox';
import { Worktrees } from './agent/worktrees/worktrees';
import { settlePendingFileChanges } from './agent/turn-files';
import { TurnUndo } from './agent/turn-undo';
import { TurnContext } from './agent/prompt/turn-context';
import { keepToolsOut } from './agent/tools/private-folders';
import type { ToolRegistry } from './agent/tools/registry';
import type { Provider } from './agent/providers/types';
import type { WorktreeRecords } from './commands/context';
import { createDispatcher, type Dispatch } from './commands/dispatcher';
import { SessionDoor, type OpenSession, type SessionOptions } from './commands/door';
import { AttachmentUploads } from './commands/attachment-uploads';
import { RenderedExports } from './commands/rendered-exports';
import { announceActivity, announceConversation } from './commands/conversation-updates';
import { isOwnerClient } from './protocol/sources';
import { configChangeEntries } from './commands/audit-records';
import { deviceLoginRecorder, recordLoginBursts } from './commands/audit-recorders';
import { FILE_EDIT_ACTOR, sessionLabel } from './commands/audit-actor';
import { EventHub } from './commands/event-hub';
import { Opening, OPEN_FAILED_TEXT } from './commands/opening';
import { TurnRunner } from './commands/turns/turn-runner';
import { conversationGone } from './commands/conversation-gone';
import { runPracticeTurn } from './commands/turns/practice-turn';
import { ConfigFile, secretValues } from './config/config-file';
import { gitStarter } from './git/git-starter';
import { LOG_FILE_NAME } from './platform/paths';
import { FileLogger } from './log/file-logger';
import { Redactor } from './log/redact';
import type { Logger } from './log/logger';
import { fail, requestIdOf, tcpChannelOf, webhookAccountsOf, websocketChannelsOf, wireText, type ServiceConfig, type ServiceError } from './protocol';
import { buildLazySchemas } from './protocol/lazy-schema';
import { bootStore, openStore, type RetentionPolicy, type Store } from './store';
import { openScratchStore } from './store/scratch';
import { NOTE_MARK_SQL } from './store/history/restore';
import type { ConfigChange } from './config/config-file';
import { bindHostFor, compileAllowFrom } from './transport/http/allow-from';
import { Authenticator } from './transport/auth/auth';
import { DeviceCredentials } from './transport/auth/device-credentials';
import { HttpServer, type RouteHandler, type Router } from './transport/http/http-server';
import { clientAddress, noRoute } from './transport/http/http-util';
import { CORE_ROUTE_KEYS, coreRoutes, createRouter, healthRoute, type Health } from './transport/http/routes';
import { attachLanSocket, attachLanSocketWhenOpen, type LanSocketDeps } from './transport/connections/lan-socket';
import { textFrame } from './transport/connections/ws-frames';
import { originOf, SignedInOrigins } from './transport/auth/browser-origins';
import { ClientKeys } from './transport/relay-link/client-keys';
import { machineIdentityOf } from './transport/relay-link/machine-identity';
import { PairingSecrets } from './transport/pairing/pairing-secrets';
import type { RelayLinkTiming } from './transport/relay-link/relay-link';
import { RelayLinks } from './transport/relay-link/relay-links';
import { createRelayPairing } from './transport/pairing/relay-pairing';
import { lanPairingUrl, pairingHostFor } from './transport/pairing/lan-pairing';
import { RELAY_HEALTH_PATH, relayStatusRoute } from './transport/relay-link/relay-status-route';
import { phonePageRoutes } from './transport/http/static-files';
import { WebhookChannel, type WebhookChannelOptions } from './channels/webhooks/channel';
import { PushService, type PushOptions } from './channels/push/push-service';
import { webPush } from './channels/push/web-push-lib';

import { PortInUseError } from './transport/port-in-use';
export { PortInUseError };

export interface ServiceOptions {
  dataDir: string;
  /** Overrides the tcp channel's port (0: any free port). */
  port?: number;
  /** Overrides the bind address (default: the docs/protocol.md rule from allow_from). */
  host?: string;
  /** Overrides the tcp channel's allow_from for this run (the container's CMD sets it). */
  allowFrom?: readonly string[];
  /** The host pairing links name, when the phone reaches this machine by another address (a container's published port: `serve --public-host`). */
  publicHost?: string;
  /** Start even if a journal segment is damaged, keeping it aside (`serve --recover`; see the store). */
  recoverJournal?: boolean;
  /** Take over a data directory lock left by another host, e.g. a recreated container (`serve --break-lock`). */
  breakLock?: boolean;
  /** Mirror log lines to stderr (headless). */
  logToStderr?: boolean;
  /**
   * The event loop is shared with others (the editor's extension host): no synchronous file write on it,
   * not even the log's (a disk that hangs would hang every extension; headless, the loop is the service's).
   */
  sharedLoop?: boolean;
  /** history.db's worker, started before the service's code loaded (src/cli-loader.ts); default: started here. */
  historyWorker?: Worker;
  /**
   * The host binds at once after begin() and counts its start to listening (the editor's activation): the
   * SQLite engines (history.db's worker thread, sql.js's WebAssembly) are started by the store's open
   * once the data directory is locked, which is after the bind, rather than while service.json is read,
   * where they held up the path to listening on a loaded machine (docs/design.md, "Editor activation, again").
   * Not with `historyWorker` (started early on purpose).
   */
  enginesAfterLock?: boolean;
  /** What the hosting program supplies (the editor's models, prompts, tools, key). */
  hostServices?: Host;
  /** Where review and land find conversations' worktrees instead of the store's table (tests that make their own with git worktree add). */
  worktrees?: WorktreeRecords;
  /** Replaces the provider resolver (benchmarks). */
  provider?: ProviderResolver;
  /** false: the model gets only service.json's system_prompt, no built-in prompt, environment or instruction files (the benchmarks' baseline). */
  agentContext?: boolean;
  /** Time limits, shortened by tests. */
  toolTimeoutMs?: number;
  /** The window failed logins from one address are counted over into one burst: a log line and an audit entry (default 60 s). */
  loginBurstWindowMs?: number;
  permissionTimeoutMs?: number;
  authTimeoutMs?: number;
  /** How long an unfinished attachment upload may go without a chunk. */
  uploadIdleTimeoutMs?: number;
  /** Webhook limits and delivery timings (retry base, attempt timeout...), shortened by tests and benchmarks. */
  webhook?: WebhookChannelOptions;
  /** Relay link timings (backoff, heartbeat), shortened by tests. */
  relay?: Partial<RelayLinkTiming>;
  /** Where the phone page's files are (default: the package's media/). */
  mediaDir?: string;
  /**
   * What the host must have done before the service takes its first command (the editor's API keys,
   * read from SecretStorage while the store opens): commands and sessions wait for it with the store.
   */
  hostReady?: Promise<unknown>;
  /** How long a client accepted while the store opens waits for it (default OPENING_WAIT_MS); tests shorten it. */
  openingWaitMs?: number;
  /** Tests only: the service is not whole before it resolves (see composeService), so a test sees what clients meet while the service opens. */
  holdOpen?: Promise<unknown>;
  /**
   * Tests only: called when the warm-up's practice turn (see Service.practise) asks its canned provider,
   * which answers once what it returns resolves (or stop cuts it short): a test acts while it is under way.
   */
  holdPractice?: () => Promise<unknown>;
  /** Web Push delivery: tests trust their fake push service (`agent`), allow its loopback endpoint, shorten the backoff. Never from service.json. */
  push?: PushOptions;
}

/** Stops waiting for in-flight work after this long on stop; running chats are then cancelled. */
const STOP_GRACE_MS = 10_000;

/**
 * The warm-up's part that costs the main thread (see Service.warmUp) waits this long after the open: the
 * requests that waited for it (a client's auth, then its first command) are answered first.
 */
const WARM_UP_DELAY_MS = 100;
/** Lazy schemas the warm-up builds a turn of the event loop (a slice 0.4-4.6 ms on this machine, tsx, loaded). */
const SCHEMAS_A_TURN = 16;

/** Where the service listens once it does: LAN pairing links name it. */
interface Listening {
  address?: { host: string; port: number };
}

/**
 * What serves before the store is open (see Service.begin): service.json, the log, the data directory's
 * lock (taken by the store's open, which goes on behind), the event hub and the door every session
 * comes in by, whose commands wait for the open (one promise, bounded: commands/opening.ts).
 */
interface ServiceFront {
  config: ConfigFile;
  logger: Logger & { close(): Promise<void> };
  /** Every secret in force (the config's and the live session tokens'), for whatever shows text: the log, the editor's webview. */
  redactor: Redactor;
  events: EventHub;
  /** One-time pairing secrets (relay and LAN), spent for device credentials. */
  pairings: PairingSecrets;
  door: SessionDoor;
  listening: Listening;
  /** The agent's turn context: made before the store opens, so the warm-up reads ahead what a first turn reads meanwhile (Service.warmUp). */
  turnContext: TurnContext;
}

/** Everything built on the store, by name: composeService builds it once the store is open, the Service runs it. */
interface ServiceParts {
  store: Store;
  tools: ToolRegistry;
  permissions: PermissionBroker;
  gate: PermissionGate;
  activity: ConversationActivity;
  agent: Agent;
  auth: Authenticator;
  turns: TurnRunner;
  webhooks: WebhookChannel;
  push: PushService;
  dispatch: Dispatch;
  relay: RelayLinks;
  /** What every client session (LAN socket or relayed client) works with. */
  sessionDeps: LanSocketDeps;
  /** The HTTP routes that need the store (`POST /auth`, `/ws/register`, `/health/relay`, webhooks). */
  router: Router;
  /** Conversations' git worktrees: those a stopped service left behind are tidied once it listens (Service.tidyWorktrees). */
  worktrees: Worktrees;
}

/**
 * The composition root's second half, in one place: once the store is open (and what a crash left
 * settled), each part once what it needs exists. Parts that call each other only later (the inbox
 * opens its sessions once started, a relay status is asked by a command) are joined by lambdas over
 * names defined below them.
 */
async function composeService(options: ServiceOptions, front: ServiceFront, opening: Promise<Store>): Promise<ServiceParts> {
  const { config, logger, redactor, events, pairings, door, listening, turnContext } = front;
  let store: Store | undefined;
  try {
    // Tests hold the open here (the directory locked, the port bound) to see what clients meet meanwhile;
    // the store's own open, or its failure, goes on behind and is met once they let go.
    await options.holdOpen;
    store = await opening;
    // Turns a stopped service left waiting for permission end now, before anything runs (the webhook inbox re-runs its turns).
    await finishInterruptedRequests(store, logger);
    // Writes a crash cut short are settled by looking at their files, before any turn writes again.
    await settlePendingFileChanges(store, logger);
  } catch (error) {
    await store?.close().catch(() => undefined);
    throw error;
  }
  const current = () => config.current;
  const host = options.hostServices ?? {};
  const permissionTimeoutMs = () => options.permissionTimeoutMs ?? config.current.permission_timeout_seconds * 1000;

  const activity: ConversationActivity = new ConversationActivity((conversationId, reply) => announceActivity({ events, store, activity }, conversationId, reply));
  const tools = createToolRegistry(current, store, logger, host);
  const permissions = new PermissionBroker({ events, store, logger, timeoutMs: permissionTimeoutMs, activity });
  const gate = new PermissionGate(
    current,
    permissions.ask,
    (conversationId) => store.conversations.get(conversationId)?.source,
    (rule, by) => addAllowRule(config, rule, logger, by),
  );
  const worktrees = new Worktrees({ store, config: current, workspaceRoots: () => workspaceRootsOf(config.current, host), logger: logger.child({ component: 'worktrees' }) });
  const agent = new Agent(
    {
      store,
      worktrees,
      config: current,
      provider: options.provider ?? createProviderResolver(host, () => redactor.secrets()),
      tools,
      gate,
      logger,
      toolTimeoutMs: options.toolTimeoutMs,
      activity,
      onActivity: (conversationId, source) => announceConversation({ events, store, activity }, conversationId, source),
      workspaceRoots: () => workspaceRootsOf(config.current, host),
      dataDir: options.dataDir,
      withContext: options.agentContext !== false,
    },
    turnContext,
  );

  const auth = new Authenticator(current, logger, redactor, Date.now, new DeviceCredentials(store.devices, pairings), options.loginBurstWindowMs);
  recordLoginBursts(auth.failures, store, logger);

  // Review and land read the store's worktree records (the worktree runs make them).
  const worktreeRecords: WorktreeRecords = options.worktrees ?? store.worktrees;
  const turns = new TurnRunner({ agent, events, store, worktrees: worktreeRecords, logger });
  // Retention deletes no conversation under a turn (nor one waiting in line); what it deletes goes as a person's delete does.
  store.maintenance.spare(() => agent.busyConversations());
  const exports = new RenderedExports();
  store.maintenance.onRetired((conversation) => conversationGone({ events, agent, gate, exports }, conversation, 'retention'));
  const webhooks = new WebhookChannel({ config, store, turns, logger, openSession: (o) => door.openSession(o) }, options.webhook);
  const push = new PushService({ dataDir: options.dataDir, store, events, logger, redactor, permissionTimeoutMs }, options.push);
  const dispatch = createDispatcher({
    config,
    store,
    agent,
    events,
    turns,
    tools,
    permissions,
    gate,
    activity,
    logger,
    push,
    undo: new TurnUndo(store),
    uploads: new AttachmentUploads(store, options.uploadIdleTimeoutMs),
    exports,
    worktrees: worktreeRecords,
    deliveries: webhooks.deliveries,
    relay: {
      status: () => relay.status(),
      createPairing: (channel) => createRelayPairing({ config: current, store, pairings, logger }, channel),
      createLanPairing: () => lanPairing(options, config.current, pairings, listening),
    },
  });
  const sessionDeps: LanSocketDeps = {
    auth,
    door,
    logger,
    authTimeoutMs: options.authTimeoutMs,
    onAdmitted: deviceLoginRecorder(store, logger),
    labelOf: (session) => sessionLabel(session, store.devices),
  };
  const relay = new RelayLinks({
    channels: () => websocketChannelsOf(config.current),
    identity: () => machineIdentityOf(store),
    clientKeys: new ClientKeys(store, pairings, logger),
    sessions: sessionDeps,
    logger,
    timing: options.relay,
  });
  const router = createRouter(new Map([...coreRoutes({ auth, store, config: current }), ...relayStatusRoute(relay)]), webhooks.router);

  // The owner's clients (the Activity screen) hear of each entry as it is recorded; nobody else does.
  store.audit.onAppended((entry) => events.broadcast({ event: 'audit.appended', entry }, isOwnerClient));

  return { store, tools, permissions, gate, activity, agent, auth, turns, webhooks, push, dispatch, relay, sessionDeps, router, worktrees };
}

/**
 * What a change of service.json does once the service is whole (a change made while it opens, such as
 * the editor's LAN setting, waits for it: its audit entry is not lost).
 */
function applyConfigChange(front: ServiceFront, parts: ServiceParts, fields: string[], previous: ServiceConfig, next: ServiceConfig, change: ConfigChange): void {
  const { events, logger } = front;
  const { store, relay } = parts;
  // Recorded right after the file was written (update_config's answer waits for it: AuditRepo.settled).
  const entries = configChangeEntries(fields, previous, next, change.by ?? FILE_EDIT_ACTOR);
  if (entries.length > 0) store.audit.append(...entries).catch((error: unknown) => logger.error('audit.not_recorded', { kind: 'config', error }));
  // First: a revoked client must not hear of the change (nor anything after it).
  events.recheckAll();
  events.broadcast({ event: 'config.changed', fields });
  if (fields.includes('channels')) relay.reconcile();
  if (fields.includes('history') || fields.includes('audit')) {
    store.maintenance.setPolicy(retentionOf(front.config.current));
    store.maintenance.kick();
  }
}

/**
 * A one-time LAN pairing: the secret and the ready link to this service's page on the address a phone
 * can reach (loopback when it listens only there). The link carries the secret, never the access token.
 */
function lanPairing(options: ServiceOptions, config: ServiceConfig, pairings: PairingSecrets, listening: Listening): { pairing_secret: string; expires_in: number; link: string } {
  const { secret, expiresIn } = pairings.create();
  const port = listening.address?.port ?? tcpChannelOf(config).port;
  const host = options.publicHost ?? pairingHostFor(listening.address?.host ?? options.host ?? bindHostFor(options.allowFrom ?? tcpChannelOf(config).allow_from));
  return { pairing_secret: secret, expires_in: expiresIn, link: lanPairingUrl(host, port, secret) };
}

/**
 * A running service. Hosts (the CLI, the editor) call begin() (or open(): begin, then wait for `ready`),
 * start() and stop(). begin() resolves once service.json is loaded and the data directory locked; the
 * store opens behind it while start() listens and takes connections: what needs the store waits for it
 * (docs/design.md, "Start-up").
 */
export class Service {
  readonly config: ConfigFile;
  readonly logger: Logger & { close(): Promise<void> };
  /** Every secret in force (the config's and the live session tokens'), for whatever shows text: the log, the editor's webview. */
  readonly redactor: Redactor;
  readonly events: EventHub;
  /** One-time pairing secrets (relay and LAN), spent for device credentials. */
  readonly pairings: PairingSecrets;
  /** Every client's way in: graceful stop waits for their commands and closes them all. Its commands wait for the open. */
  private readonly door: SessionDoor;
  private readonly listening: Listening;
  /** The store and everything built on it (plus the host's own `hostReady`). */
  private readonly opening: Opening<ServiceParts>;
  /** Settles once the open did: resolved when whole, rejected (everything closed) when it failed. */
  private readonly whole: Promise<void>;
  private http?: HttpServer;
  private readonly startedAt = Date.now();
  /** File tools never open the data directory, even when the workspace holds it (see private-folders). */
  private readonly releaseDataDir: () => void;
  /** The agent's, made before the store opens (ServiceFront.turnContext). */
  private readonly turnContext: TurnContext;
  /** Ends the warm-up, its practice turn with it: stop, a failed open, the agent's first turn (Agent.endsWarmUp). */
  private readonly practice = new AbortController();
  /** The warm-up's practice turn, once begun: stop waits for it before the store closes. */
  private practising?: Promise<void>;
  private warmUpOver: (whole: boolean) => void = () => {};
  /**
   * Settles once the warm-up after listening is over: true when every step ran, false when a first turn
   * or stop cut it short (as the log's `service.warmed_up` / `service.warm_up_cut_short`), or when it
   * never began (stop before the open ended, or the open failed). The build's rehearsal of a start waits
   * for it (cli-rehearsal.ts).
   */
  readonly warmedUp = new Promise<boolean>((resolve) => (this.warmUpOver = resolve));
  private stopping?: Promise<void>;

  private constructor(
    readonly options: ServiceOptions,
    opened: Pick<ServiceFront, 'config' | 'logger' | 'redactor'>,
    storeOpening: Promise<Store>,
  ) {
    ({ config: this.config, logger: this.logger, redactor: this.redactor } = opened);
    this.releaseDataDir = keepToolsOut(options.dataDir);
    this.events = new EventHub();
    this.pairings = new PairingSecrets();
    this.listening = {};
    this.turnContext = new TurnContext(() => workspaceRootsOf(this.config.current, options.hostServices), options.dataDir);
    // A client that may answer hears of every request waiting for it as soon as it is in (a phone back online).
    this.door = new SessionDoor({
      dispatch: (frame, session) => {
        const parts = this.opening.current;
        if (parts) return parts.dispatch(frame, session);
        return this.opening.wait().then(
          (opened) => opened.dispatch(frame, session),
          (error: ServiceError) => fail(error.code, error.message, requestIdOf(frame)),
        );
      },
      events: this.events,
      welcome: (session) => this.whenWhole((parts) => parts.permissions.resendTo(session)),
    });
    const front: ServiceFront = { ...opened, events: this.events, pairings: this.pairings, door: this.door, listening: this.listening, turnContext: this.turnContext };
    const composed = composeService(options, front, storeOpening);
    this.opening = new Opening(
      Promise.all([composed, options.hostReady?.catch(() => undefined)]).then(([parts]) => parts),
      options.openingWaitMs,
    );
    this.whole = this.opening.done.then(
      () => undefined,
      async (error: unknown) => {
        await this.closeFailedOpen(error);
        throw error;
      },
    );
    // The host awaits `ready` (or not: a stop waits for it); this copy must not count as unhandled.
    this.whole.catch(() => undefined);

    this.config.on('change', (fields, next, change) => {
      this.redactor.setSecrets(secretValues(next));
      this.logger.info('config.changed', { fields });
      this.whenWhole((parts) => applyConfigChange(front, parts, fields, change.previous, next, change));
    });
    this.config.on('invalid', (error: Error) => this.logger.error('config.invalid', { error: error.message }));
  }

  /**
   * Loads service.json (throws ConfigError naming each bad field) and the log, and takes the data
   * directory's lock (throws DataDirInUseError); resolves then, the store opening behind (`ready`).
   */
  static async begin(options: ServiceOptions): Promise<Service> {
    // The SQLite engines load (and a new data directory's history.db is built aside) while service.json
    // is read (and written, in a new data directory), unless the host binds first (enginesAfterLock):
    // then the store's open starts them once the lock is held.
    const boot = options.enginesAfterLock && !options.historyWorker ? undefined : bootStore(options.historyWorker, options.dataDir);
    let config: ConfigFile;
    try {
      config = await ConfigFile.load(options.dataDir);
    } catch (error) {
      await boot?.cancel();
      throw error;
    }
    const redactor = new Redactor();
    redactor.setSecrets(secretValues(config.current));
    const logger = new FileLogger({
      file: join(options.dataDir, LOG_FILE_NAME),
      redactor,
      mirror: options.logToStderr ?? false,
      mirrorLevel: 'info',
      writeOnLoop: options.sharedLoop !== true,
    });
    let locked = () => {};
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const storeOpening = openStore(options.dataDir, {
      logger,
      recover: options.recoverJournal,
      breakLock: options.breakLock,
      retention: retentionOf(config.current),
      boot,
      onLocked: () => locked(),
    });
    try {
      // The open's failure before the lock (held by another) is begin's; after it, `ready`'s.
      await Promise.race([lockTaken, storeOpening]);
    } catch (error) {
      await config.close();
      await logger.close();
      throw error;
    }
    return new Service(options, { config, logger, redactor }, storeOpening);
  }

  /** begin(), then the whole open: resolves with a service that has its store (not listening yet). */
  static async open(options: ServiceOptions): Promise<Service> {
    const service = await Service.begin(options);
    await service.ready;
    return service;
  }

  /**
   * Resolves once the service is whole: the store open, what a crash left settled, every part built on
   * it (and the host's `hostReady`). Rejects with the open's error once everything was closed (the
   * clients that waited were answered first), as begin() would have.
   */
  get ready(): Promise<void> {
    return this.whole;
  }

  /** Whether the open has failed (then `ready` rejects with its error). */
  get openFailed(): boolean {
    return this.opening.state === 'failed';
  }

  /** The parts built on the store; reading one before `ready` is a bug of the caller. */
  private get parts(): ServiceParts {
    const parts = this.opening.current;
    if (!parts) throw new Error('the service is still opening its store (await service.ready)');
    return parts;
  }

  get store(): Store {
    return this.parts.store;
  }
  get tools(): ToolRegistry {
    return this.parts.tools;
  }
  get permissions(): PermissionBroker {
    return this.parts.permissions;
  }
  get gate(): PermissionGate {
    return this.parts.gate;
  }
  get activity(): ConversationActivity {
    return this.parts.activity;
  }
  get agent(): Agent {
    return this.parts.agent;
  }
  get auth(): Authenticator {
    return this.parts.auth;
  }
  get dispatch(): Dispatch {
    return this.parts.dispatch;
  }
  get webhooks(): WebhookChannel {
    return this.parts.webhooks;
  }
  /** The links to the relays of service.json's `websocket` channels. */
  get relay(): RelayLinks {
    return this.parts.relay;
  }
  /** Web Push: the devices, the VAPID key and the notifier tapping the event hub. */
  get push(): PushService {
    return this.parts.push;
  }

  /** Runs `then` with the whole service: now, or once the open is over (never, if it fails). */
  private whenWhole(then: (parts: ServiceParts) => void): void {
    const parts = this.opening.current;
    if (parts) then(parts);
    else void this.opening.done.then(then, () => undefined);
  }

  /**
   * The open failed after the service listened: the clients that waited are answered first (their
   * waits settle in microtasks, before this turn of the loop ends), then the server, service.json and
   * the log close, as a failed open left them before listening came first.
   */
  private async closeFailedOpen(error: unknown): Promise<void> {
    this.logger.error('service.open_failed', { error: error instanceof Error ? error.message : String(error) });
    await new Promise((resolve) => setImmediate(resolve));
    this.practice.abort();
    this.warmUpOver(false);
    this.turnContext.close();
    this.door.closeAll();
    await this.http?.close();
    this.http = undefined;
    this.releaseDataDir();
    await this.config.close();
    await this.logger.close();
  }

  /**
   * Listens on the tcp channel, whether or not the store is open yet (connections then wait for it, see
   * Opening); rejects with PortInUseError when the port is taken, or with the open's error once it failed.
   */
  async start(): Promise<{ host: string; port: number; url: string }> {
    // A host that stopped the service (the editor's Stop while the lock was being taken) must not find the
    // port bound after its stop said done.
    if (this.stopping) throw new Error('the service is stopping');
    if (this.opening.state === 'failed') await this.whole;
    const channel = tcpChannelOf(this.config.current);
    const allowFrom = () => this.options.allowFrom ?? tcpChannelOf(this.config.current).allow_from;
    const host = this.options.host ?? bindHostFor(allowFrom());
    const port = this.options.port ?? channel.port;
    // What answers before the store is open: the health check and the phone page's files.
    const beforeOpen = new Map([...healthRoute(this.startedAt, () => this.health()), ...phonePageRoutes(this.options.mediaDir ?? join(__dirname, '..', 'media'))]);
    const router: Router = (method, path) => beforeOpen.get(`${method} ${path}`) ?? this.routeWhenOpen(method, path);
    let filter = { patterns: allowFrom(), allowed: compileAllowFrom(allowFrom()) };
    const allowed = () => {
      const patterns = allowFrom();
      if (patterns !== filter.patterns) filter = { patterns, allowed: compileAllowFrom(patterns) };
      return filter.allowed;
    };
    // A browser's socket (it says its page's Origin) counts its failed logins apart: a web site cannot lock the address out.
    const origins = new SignedInOrigins();
    const attach = (socket: import('ws').WebSocket, address: string, origin: string | undefined, authenticated: () => void) => {
      const { sessionDeps } = this.parts;
      attachLanSocket(
        socket,
        address,
        {
          ...sessionDeps,
          addressAllowed: (remote) => allowed()(remote),
          onAdmitted: (session, paired) => {
            origins.signedIn(origin);
            authenticated();
            sessionDeps.onAdmitted?.(session, paired);
          },
        },
        origins.limitKey(address, origin),
      );
    };
    const http = new HttpServer({
      router,
      allowed,
      logger: this.logger,
      // Failed logins are counted once the store is open (their `auth` waits for it): none before.
      loginRefusedFor: (address) => this.opening.current?.auth.failures.refusedFor(address, 'token') ?? 0,
      refusesConnection: (address) => this.opening.current?.auth.failures.refusesConnection(address) ?? false,
      onWebSocket: (socket, req, authenticated) => {
        const address = clientAddress(req);
        const origin = originOf(req.headers.origin);
        if (this.opening.current) attach(socket, address, origin, authenticated);
        else
          attachLanSocketWhenOpen(
            socket,
            () => this.opening.wait(),
            () => attach(socket, address, origin, authenticated),
          );
      },
    });
    let address: { host: string; port: number };
    try {
      address = await http.listen(port, host);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(host, port);
      throw error;
    }
    if (this.opening.state === 'failed') {
      await http.close();
      await this.whole;
    }
    // Stopped while it bound: the stop did not see this server (not yet `this.http`), so it goes here.
    if (this.stopping) {
      await http.close();
      throw new Error('the service is stopping');
    }
    this.http = http;
    this.listening.address = address;
    this.config.watch();
    const shownHost = address.host === '::' ? '0.0.0.0' : address.host;
    this.logger.info('service.listening', { host: shownHost, port: address.port });
    // What a first chat waits longest for and the store has no part in (git's status of the workspace)
    // is read ahead from now on, while the store opens; the rest once it is open (warmUp). The git
    // starter's process first, at the warm-up's first step rather than here: its spawn blocks this
    // thread (a fork of the whole process: 10-50 ms in an editor's extension host on a loaded machine)
    // and the host counts its start (the editor's activation) to this method's return.
    const warmUpBegan = performance.now();
    const early = this.warmUpSteps([() => gitStarter.prepare(), ...this.earlyWarmUp()], 0);
    this.whenWhole(() => {
      // Stopped before the open ended: the warm-up never begins, and says so.
      if (this.http !== http || this.stopping) return this.warmUpOver(false);
      this.parts.push.start();
      this.parts.webhooks.start();
      this.parts.relay.start();
      this.warmUp(early, warmUpBegan);
      this.tidyWorktrees();
    });
    return { ...address, url: `http://${shownHost}:${address.port}` };
  }

  /**
   * Worktrees of conversations deleted since the last run go, and those landed by a land cut short are
   * marked so, in the background (git), once the requests that waited for the open were answered: their
   * first reads of the store (sql.js compiling its code for them) and git's processes ran on the start's
   * longest path, between the open and the first command's answer, when they began as the service became
   * whole (docs/design.md, "What competes with the open for the cores (s12)").
   */
  private tidyWorktrees(): void {
    const { worktrees } = this.parts;
    // Rows of earlier runs only: by then chats that waited for the open may be making theirs.
    const opened = new Date().toISOString();
    setTimeout(() => {
      if (this.stopping) return;
      void worktrees
        .removeOrphans(opened)
        .catch((error: unknown) => this.logger.warn('worktree.cleanup_failed', { error }))
        .then(() => worktrees.markLanded())
        .catch((error: unknown) => this.logger.warn('worktree.landed_check_failed', { error }));
    }, WARM_UP_DELAY_MS).unref();
  }

  /** What `GET /health` says: starting while the store opens, then whether it can save (docs/protocol.md). */
  private async health(): Promise<Health> {
    const parts = this.opening.current;
    if (!parts) return this.opening.state === 'failed' ? { status: 'failed', reason: OPEN_FAILED_TEXT } : { status: 'starting' };
    const reason = await parts.store.problem();
    return reason === null ? { status: 'ok' } : { status: 'degraded', reason };
  }

  /** The routes that need the store: now, or a handler that waits for the open (bounded) and then finds its route. */
  private routeWhenOpen(method: string, path: string): RouteHandler | undefined {
    const parts = this.opening.current;
    if (parts) return parts.router(method, path);
    // Only these can be routes of the store (POST /auth, /ws/register, a webhook account's path in
    // service.json; GET /health/relay): anything else (a scanner's GETs and POSTs) is a 404 now rather
    // than a connection held for the open's whole wait.
    if (!this.mayBeStoreRoute(method, path)) return undefined;
    return async (req, res, url) => {
      const handler = (await this.opening.wait()).router(method, path);
      if (!handler) throw noRoute(method, path);
      await handler(req, res, url);
    };
  }

  private mayBeStoreRoute(method: string, path: string): boolean {
    const key = `${method} ${path}`;
    if ((CORE_ROUTE_KEYS as readonly string[]).includes(key) || key === `GET ${RELAY_HEALTH_PATH}`) return true;
    return method === 'POST' && [...webhookAccountsOf(this.config.current).values()].some((account) => account.incoming_path === path);
  }

  /** Graceful stop: stop accepting, let in-flight work finish (bounded), flush the database, release the lock. */
  stop(): Promise<void> {
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  private async shutDown(): Promise<void> {
    this.practice.abort();
    this.http?.stopAccepting();
    // A stop during the open waits for it: the store is closed whole. A failed open closed everything.
    const opened = await this.whole.then(
      () => true,
      () => false,
    );
    if (!opened) return;
    // The log is closed whatever fails before: its held lines (a turn's chat.answered) are written then.
    try {
      await this.closeParts();
      this.logger.info('service.stopped');
    } finally {
      await this.logger.close();
    }
  }

  /** Everything but the log, in order: in-flight work ended (bounded), clients told, the store closed. */
  private async closeParts(): Promise<void> {
    const { webhooks, permissions, agent, turns, relay, push, tools, auth, store } = this.parts;
    // Webhook work not started stays queued in the database; attempts in flight end (bounded) before the store closes.
    const webhooksStopped = webhooks.stop();
    // A turn waiting for a person would hold the stop for nothing: its tool is denied and the turn ends.
    permissions.stop();
    const settled = Promise.allSettled([this.door.settled(), agent.idle(), webhooksStopped]);
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), STOP_GRACE_MS).unref());
    if ((await Promise.race([settled, timer])) === 'timeout') {
      this.logger.warn('service.stop_timeout', { inFlight: this.door.inFlightCount });
      turns.cancelAll();
      await settled;
    }
    // Every answer is out (relayed clients' too: their links stay up until now). The links go (the relay
    // tells their clients the machine is offline; they stay connected to it), then every other client.
    relay.stop();
    this.door.closeAll();
    await push.stop();
    await this.http?.close();
    this.http = undefined;
    await tools.close();
    this.turnContext.close();
    auth.failures.flush();
    this.releaseDataDir();
    await store.audit.settled();
    // Its scratch database lives in history.db's worker, which the store's close ends.
    await this.practising?.catch(() => undefined);
    await store.close();
    await this.config.close();
  }

  get listeningAddress() {
    return this.listening.address;
  }

  /** A one-time LAN pairing and its ready link (lanPairing): `serve` and `pair` print it. */
  createLanPairing(): { pairing_secret: string; expires_in: number; link: string } {
    return lanPairing(this.options, this.config.current, this.pairings, this.listening);
  }

  /**
   * A client of the host itself (the editor's views, its palette commands, its connection info) comes
   * in by the same door as a socket (commands/door.ts): graceful stop waits for its commands and closes
   * it. It may open while the store opens: its commands wait for it.
   */
  openSession(options: SessionOptions): OpenSession {
    return this.door.openSession(options);
  }

  /** The sessions open now, whatever carries them. */
  get sessionCount(): number {
    return this.door.size;
  }

  /** Commands and webhook turns in flight (what graceful stop waits for). */
  get inFlightCount(): number {
    return this.door.inFlightCount;
  }

  /**
   * The warm-up's practice turn: one streamed chat, run as a client's is (commands/turns/practice-turn.ts:
   * a turn runner, its events framed for a follower), by a twin of the agent (Agent.practiceTwin) over a
   * scratch store (store/scratch.ts, its blobs in memory) and tools that refuse every call
   * (createPracticeToolRegistry), with the configured provider's SDK and a canned fetch
   * (providers/rehearsal.ts), so the first chat does not run that code for the first time (issue 25).
   * Then the statements it prepared are prepared on the real database too (prepared, not run), one a
   * turn of the event loop. It writes nothing anywhere, tells no client, logs nothing and asks no
   * provider. A turn that begins meanwhile ends it (Agent.endsWarmUp) and does not wait for it but for
   * the slice under way: the practice is there to compile what that turn now compiles itself. stop()
   * cuts it short and waits for it (shutDown).
   */
  private practise(): Promise<void> {
    const { store, agent } = this.parts;
    const { signal } = this.practice;
    const run = async () => {
      // A turn that began since whole stopped the warm-up (Agent.endsWarmUp): it compiles what the practice would.
      if (signal.aborted) return;
      try {
        const scratch = await openScratchStore(store, signal);
        try {
          const workspaceRoots = () => workspaceRootsOf(this.config.current, this.options.hostServices);
          const tools = createPracticeToolRegistry(() => this.config.current, scratch, workspaceRoots);
          const provider = held(practiceProvider(this.config.current.provider), this.options.holdPractice, signal);
          // Its events framed as a socket's would be (the text, then the frame), and dropped.
          await runPracticeTurn(
            (announce) => agent.practiceTwin({ store: scratch, provider, tools, ...announce }),
            scratch,
            (event) => textFrame(wireText(event)),
            signal,
          );
          // What a turn leaves to the loop's next check phase (its rows' seqs read for the history cache)
          // runs first: its statements are the first chat's too.
          await nextTurn();
          // And history.db's sync mark, which the open's sync leaves to ride the next write: since the webhook
          // channel's first clean-up waits 30 s (s20), that write is often a first chat's message.
          for (const text of [...scratch.db.statementTexts(), NOTE_MARK_SQL]) {
            if (signal.aborted) break;
            await nextTurn();
            store.db.prepareAhead([text]);
          }
        } finally {
          await scratch.close();
        }
      } finally {
        // The protocol's schemas are built at their first use (protocol/lazy-schema.ts), so a start's ready
        // does not wait for them; those no client used yet are built now (also after a failed practice), a
        // slice a turn of the loop, so that a first command of a kind does not pay for its schema, and the
        // garbage of building them falls here and not in a first chat (their scavenge, ~10 ms, did when
        // they were left to first use).
        while (!signal.aborted && buildLazySchemas(SCHEMAS_A_TURN)) await nextTurn();
      }
    };
    // Cut short by stop: not a failure of the warm-up.
    this.practising = run().catch((error: unknown) => {
      if (!signal.aborted) throw error;
    });
    return this.practising;
  }

  /**
   * The warm-up's first part, from listening on, while the store opens: what a turn's context reads
   * (TurnContext.warmUp). Its git status waits for the git starter's own start (a Node process: 0.3-1.3 s
   * on a loaded machine) and then git's, which begun after the open made the warm-up end 0.8-1.9 s after
   * listening, so a chat sent 1 s after start waited for them (issue 25). It costs the main thread little
   * (a few file reads, the starter's messages): what does (the SDK, Node's fetch, the practice turn)
   * waits for the open, so the start's ready (its first command answered) comes no later.
   */
  private earlyWarmUp(): (() => unknown)[] {
    const config = this.config.current;
    return this.options.agentContext !== false ? [() => this.turnContext.warmUp(config)] : [];
  }

  /**
   * The heavy modules (src/agent/providers/registry.ts, mcp-sdk.ts, web-push-lib.ts) are not loaded at
   * start; once the store is open, those this configuration will use are, one per turn of the event
   * loop, and a practice turn runs the turn's code once (practise), so the first chat (or push) is
   * answered as fast as the next rather than paying for them; what a turn's context reads (git's status,
   * instruction files) is read ahead from listening on (earlyWarmUp: `early`). The agent's first turn
   * ends the warm-up (Agent.endsWarmUp): what is left, that turn does itself, and it waits for no step
   * but the one under way.
   */
  private warmUp(early: Promise<boolean>, began: number): void {
    const config = this.config.current;
    if (!this.agent.endsWarmUp(this.practice)) this.practice.abort();
    // Its loopback servers close when the warm-up ends (stop, a first turn), whatever they still wait for.
    const provider = providerWarmUp(config.provider, this.practice.signal);
    const steps = [
      ...provider,
      // Built now (the resolver keeps it while the configuration stays), not by the first turn.
      ...(provider.length > 0 ? [() => this.agent.warmUpProvider(this.practice.signal)] : []),
      // Once the SDK is loaded: it streams the practice's answer.
      () => this.practise(),
      () => Object.keys(config.mcp_servers).length > 0 && mcpSdk(),
      () => this.store.pushDevices.list().length > 0 && webPush(),
    ];
    // When it was over tells whether a chat found it done (bench/start.ts reads it).
    // A warm-up a first turn ended (or stop) is said so: its later steps did not run.
    void Promise.all([early, this.warmUpSteps(steps, WARM_UP_DELAY_MS)]).then(([earlyWhole, restWhole]) => {
      if (this.http) this.logger.info(earlyWhole && restWhole ? 'service.warmed_up' : 'service.warm_up_cut_short', { ms: Math.round(performance.now() - began) });
      this.warmUpOver(earlyWhole && restWhole);
    });
  }

  /**
   * Runs `steps` from `delayMs` on, one per turn of the event loop (what waits, a client's command, runs between them),
   * until the warm-up ends (`practice` aborted); settles once each begun step's work has, with whether
   * every step ran. A step's failure is logged: the first use meets the same error and reports it to
   * whom it concerns.
   */
  private warmUpSteps(steps: (() => unknown)[], delayMs: number): Promise<boolean> {
    // A step the warm-up's end stopped under way did not fail.
    const warmFailed = (error: unknown) => this.practice.signal.aborted || this.logger.warn('service.warm_up_failed', { error: (error as Error).message });
    const pending: unknown[] = [];
    return new Promise<boolean>((resolve) => {
      const next = () => {
        const step = this.practice.signal.aborted ? undefined : steps.shift();
        if (!step) {
          // Whole: every step began, and none was stopped under way (a first turn aborts the practice).
          void Promise.allSettled(pending).then(() => resolve(steps.length === 0 && !this.practice.signal.aborted));
          return;
        }
        try {
          const result = step();
          pending.push(result instanceof Promise ? result.catch(warmFailed) : result);
        } catch (error) {
          warmFailed(error);
        }
        setTimeout(next, 0).unref();
      };
      setTimeout(next, delayMs).unref();
    });
  }
}

/** `provider`, answering once `hold` resolves or `signal` aborts (ServiceOptions.holdPractice). */
function held(provider: Provider, hold: (() => Promise<unknown>) | undefined, signal: AbortSignal): Provider {
  if (!hold) return provider;
  const aborted = new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  return {
    ...provider,
    complete: async (request) => {
      await Promise.race([hold(), aborted]);
      return provider.complete(request);
    },
  };
}

/** Yields to the event loop: what waits (a client's command, a timer) runs before the practice goes on. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** service.json's `history` and `audit` settings as the store's retention policy. */
function retentionOf(config: ServiceConfig): RetentionPolicy {
  const { max_days: maxDays, max_bytes: maxBytes, tool_output_days: toolOutputDays } = config.history;
  return { maxDays, maxBytes, toolOutputDays, auditMaxDays: config.audit.max_days };
}
