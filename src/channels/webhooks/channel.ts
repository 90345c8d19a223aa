import { isDeepStrictEqual } from 'node:util';
import type { OpenSession, SessionOptions } from '../../commands/door';
import type { ConfigFile } from '../../config/config-file';
import { webhookAccountsOf, type ServiceConfig, type WebhookAccount } from '../../protocol';
import type { Logger } from '../../log/logger';
import type { Store } from '../../store';
import type { Router } from '../../transport/http/http-server';
import { IDEMPOTENCY_WINDOW_MS, IncomingWebhooks } from './incoming';
import { WebhookInbox } from './inbox';
import type { DeliveryCommands, TurnStarter } from '../../commands/context';
import { DEFAULT_OUTBOX_TIMINGS, WebhookOutbox, type OutboxTimings } from './outbox';

/** Limits and timings of the channel; the defaults are docs/protocol.md's, tests and benchmarks shorten them. */
export interface WebhookChannelOptions extends Partial<OutboxTimings> {
  /** Requests a minute per account (default 120). */
  rateLimitPerMinute?: number;
  /** Largest incoming body (default 1 MiB). */
  maxBodyBytes?: number;
  /** Signed bodies of one account read at once before their signature is checked (default 16). */
  maxUnverifiedReads?: number;
  maxUnverifiedReadsPerAddress?: number;
  unverifiedReadMs?: number;
  /** Agent runs at once for webhook messages (default 32). */
  answerConcurrency?: number;
}

export interface WebhookChannelDeps {
  config: ConfigFile;
  store: Store;
  /** Where each message's turn runs (commands/turns/turn-runner.ts), as a chat's does. */
  turns: TurnStarter;
  logger: Logger;
  /** The service's door (commands/door.ts): each account's turns run in its session. */
  openSession(options: SessionOptions): OpenSession;
}

const SWEEP_EVERY_MS = 60 * 60_000;
/** The first clean-up after start: past a start's busy seconds (the warm-up, a first chat). */
const FIRST_SWEEP_AFTER_MS = 30_000;
const KEEP_ANSWERED_INBOX_MS = 24 * 60 * 60_000;
const KEEP_DELIVERED_MS = 7 * 24 * 60 * 60_000;
/** A failed delivery stays this long after it failed (list_deliveries shows it, retry_delivery sends it again). */
const KEEP_FAILED_MS = 30 * 24 * 60 * 60_000;

interface Accounts {
  config: ServiceConfig;
  byName: ReadonlyMap<string, WebhookAccount>;
  byPath: ReadonlyMap<string, string>;
}

/**
 * The webhook channel (service-spec 4.5, docs/protocol.md "Webhook channel"): the incoming routes of every
 * account in service.json, resolved per request so accounts added, changed or removed by editing the
 * file apply at once; the durable inbox the agent answers from; and the durable outbox of callbacks.
 */
export class WebhookChannel {
  /** The live routes: `POST <incoming_path>` of each account in force. */
  readonly router: Router;
  readonly outbox: WebhookOutbox;
  readonly inbox: WebhookInbox;
  private readonly incoming: IncomingWebhooks;
  private readonly log: Logger;
  private memo?: Accounts;
  private sweeper?: NodeJS.Timeout;
  private firstSweep?: NodeJS.Timeout;
  private stopped?: Promise<void>;

  constructor(
    private readonly deps: WebhookChannelDeps,
    options: WebhookChannelOptions = {},
  ) {
    this.log = deps.logger.child({ component: 'webhook' });
    const { rateLimitPerMinute, maxBodyBytes, maxUnverifiedReads, maxUnverifiedReadsPerAddress, unverifiedReadMs, answerConcurrency, ...timings } = options;
    const accounts = () => this.accounts().byName;
    this.outbox = new WebhookOutbox({ store: deps.store, accounts, logger: deps.logger, timings });
    this.inbox = new WebhookInbox({
      store: deps.store,
      turns: deps.turns,
      openSession: (options) => deps.openSession(options),
      accounts,
      logger: deps.logger,
      outbox: this.outbox,
      retry: { ...DEFAULT_OUTBOX_TIMINGS, ...timings },
      concurrency: answerConcurrency,
    });
    this.incoming = new IncomingWebhooks(
      { store: deps.store, logger: deps.logger, onAccepted: (row) => this.inbox.enqueue(row) },
      { rateLimitPerMinute, maxBodyBytes, maxUnverifiedReads, maxUnverifiedReadsPerAddress, unverifiedReadMs },
    );
    this.router = (method, path) => {
      if (method !== 'POST') return undefined;
      const { byName, byPath } = this.accounts();
      const name = byPath.get(path);
      if (name === undefined) return undefined;
      const account = byName.get(name)!;
      return (req, res) => this.incoming.handle(req, res, name, account);
    };
    deps.config.on('change', (fields) => {
      if (fields.includes('channels')) this.logAccountChanges();
    });
  }

  /** What the list_deliveries and retry_delivery commands use. */
  get deliveries(): DeliveryCommands {
    return this.outbox;
  }

  /** Answers messages left pending by the last run, starts the outbox and the hourly clean-up. */
  start(): void {
    const names = [...this.accounts().byName.keys()];
    if (names.length > 0) this.log.info('webhook.accounts', { accounts: names });
    this.warnWithoutSecret();
    this.inbox.resume();
    this.outbox.start();
    // The first clean-up waits out the start: at once, its five statements (SQLite's code for them compiled
    // on this thread) and its journal record came between the store's open and the first command's answer.
    this.firstSweep = setTimeout(() => void this.sweep(), FIRST_SWEEP_AFTER_MS);
    this.firstSweep.unref();
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  /** No new runs or attempts; waits for attempts in flight (bounded). Pending work stays in the database. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      clearTimeout(this.firstSweep);
      clearInterval(this.sweeper);
      this.incoming.flush();
      this.inbox.stop();
      await this.outbox.stop();
    })();
    return this.stopped;
  }

  private accounts(): Accounts {
    const config = this.deps.config.current;
    if (this.memo?.config === config) return this.memo;
    const byName = webhookAccountsOf(config);
    const byPath = new Map<string, string>();
    for (const [name, account] of byName) byPath.set(account.incoming_path, name);
    this.memo = { config, byName, byPath };
    return this.memo;
  }

  /**
   * Names the accounts anyone who reaches the port may post to. (The field is `accounts`: a name holding
   * "secret" would have the log's redactor hide the names.)
   */
  private warnWithoutSecret(): void {
    const open = [...this.accounts().byName].filter(([, a]) => !a.secret).map(([name]) => name);
    if (open.length > 0) this.log.warn('webhook.accounts_without_secret', { accounts: open, note: 'anyone who can reach the port may post to these; their turns run no tools' });
  }

  private logAccountChanges(): void {
    const before = this.memo?.byName ?? new Map<string, WebhookAccount>();
    const after = this.accounts().byName;
    const added = [...after.keys()].filter((name) => !before.has(name));
    const removed = [...before.keys()].filter((name) => !after.has(name));
    const changed = [...after.keys()].filter((name) => before.has(name) && !isDeepStrictEqual(before.get(name), after.get(name)));
    if (added.length + removed.length + changed.length === 0) return;
    this.log.info('webhook.accounts_changed', { added, removed, changed });
    this.warnWithoutSecret();
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    try {
      const removed = await this.deps.store.webhooks.prune({
        idempotencyBeforeMs: now - IDEMPOTENCY_WINDOW_MS,
        inboxBeforeMs: now - KEEP_ANSWERED_INBOX_MS,
        deliveredBeforeMs: now - KEEP_DELIVERED_MS,
        failedBeforeMs: now - KEEP_FAILED_MS,
      });
      if (removed > 0) this.log.info('webhook.pruned', { rows: removed });
    } catch (error) {
      this.log.warn('webhook.prune_failed', { error });
    }
  }
}
