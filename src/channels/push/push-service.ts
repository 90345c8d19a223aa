import type https from 'node:https';
import { KeyedQueue } from '../../agent/keyed-queue';
import type { PushCommands } from '../../commands/context';
// The events a push may follow from: the hub need not make others for the push service's sake.
import { ANNOUNCED, type EventFilter, type EventHub } from '../../commands/event-hub';
import { personOf, type ClientSession } from '../../commands/session';
import { sourceOf, sourceText, webhookAccountOf } from '../../protocol/sources';
import { isOwner } from '../../commands/roles';
import type { Logger } from '../../log/logger';
import { ServiceError, type CommandOf, type PushDevice, type PushTestResult, type ServiceEvent } from '../../protocol';
import { mayUse, type PushDeviceRow, type Store } from '../../store';
import { DeviceVisibility } from './device-visibility';
import { checkSubscription, guardedAgent, type EndpointPolicy } from './endpoint-guard';
import { promptPayload, promptTag, resolvedPayload, reviewPayload, reviewTag, runPayload, runTag, testPayload, topicOf, type EndedRun, type TextFilter } from './push-payloads';
import type { PushKind } from '../../protocol/push-payload';
import { PushSender, type DeliveryOutcome, type PushMessage, type PushSenderOptions } from './push-sender';
import { VapidKeyStore } from './vapid-keys';

/** Web Push options of the service (ServiceOptions.push): tests trust their fake push service and shorten the backoff. */
export interface PushOptions extends PushSenderOptions, EndpointPolicy {
  /** Devices at most (default 20). */
  maxDevices?: number;
}

export interface PushServiceDeps {
  dataDir: string;
  store: Store;
  events: EventHub;
  logger: Logger;
  /** Secrets out of notification text; the VAPID private key into the redaction list. */
  redactor: { redactText(text: string): string; addSecret(secret: string): void };
  /** How long a permission request waits (its push's TTL when the event does not say when it expires). */
  permissionTimeoutMs: () => number;
}

const DEFAULT_MAX_DEVICES = 20;
/** A finished run's notification is worth a day; a test's, a few minutes. */
const RUN_TTL_SECONDS = 24 * 3600;
const TEST_TTL_SECONDS = 300;
/** How long stop waits for pushes in flight before the store closes. */
const STOP_WAIT_MS = 2_000;

type PermissionRequest = Extract<ServiceEvent, { event: 'permission.request' }>;
type TurnEnded = Extract<ServiceEvent, { event: 'turn.ended' }>;

/** A prompt pushed to devices: they are told when it is resolved, with the same tag. */
interface PushedPrompt {
  conversationId: string;
  deviceIds: string[];
  expiresAtMs: number;
}

function deviceView(row: PushDeviceRow): PushDevice {
  return {
    device_id: row.device_id,
    device_name: row.device_name,
    created_at: row.created_at,
    endpoint_origin: new URL(row.endpoint).origin,
    events: row.events,
    content_blind: row.content_blind,
    last_delivery: row.last_delivery,
    failures: row.failures,
  };
}

/**
 * Web Push, the service side (docs/protocol.md, "Web Push"): the devices and their settings, and the
 * notifier. It taps the event hub (EventHub.observe), so it hears of every prompt and turn whether or
 * not a client is connected, and pushes to each device whose subscriber would have received the event
 * (the same filter: a session user's device gets no prompt only the owner may answer), that wants that
 * kind, and whose page is not visible. Pushes to one device go out one at a time, in order (a prompt's
 * withdrawal never overtakes it); outcomes are recorded on the device; a subscription the push service
 * says is gone (404/410) is dropped.
 */
export class PushService implements PushCommands {
  private readonly keys: VapidKeyStore;
  private readonly sender: PushSender;
  private readonly agent: https.Agent;
  private readonly ownAgent: boolean;
  private readonly visibility: DeviceVisibility;
  private readonly perDevice = new KeyedQueue();
  private readonly prompts = new Map<string, PushedPrompt>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly text: TextFilter;
  private readonly log: Logger;
  private stopObserving?: () => void;
  private stopped = false;
  /** Past stop's wait: the store is closing, outcomes of pushes still in flight are not recorded. */
  private closed = false;

  constructor(
    private readonly deps: PushServiceDeps,
    private readonly options: PushOptions = {},
  ) {
    this.log = deps.logger.child({ component: 'push' });
    this.keys = new VapidKeyStore(deps.dataDir, (secret) => deps.redactor.addSecret(secret));
    this.ownAgent = options.agent === undefined;
    this.agent = options.agent ?? guardedAgent();
    this.sender = new PushSender(() => this.keys.keys(), this.agent, options);
    this.visibility = new DeviceVisibility((session) => deps.events.has(session));
    this.text = (text) => deps.redactor.redactText(text);
  }

  start(): void {
    this.stopObserving ??= this.deps.events.observe((event, filter) => this.observe(event, filter), ANNOUNCED);
  }

  /** No new pushes; those in flight get a moment to finish (and be recorded) before the store closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopObserving?.();
    const timer = new Promise((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref());
    await Promise.race([Promise.allSettled([...this.inFlight]), timer]);
    this.closed = true;
    if (this.ownAgent) this.agent.destroy();
  }

  // ---- Commands ----

  async info(): Promise<{ vapid_public_key: string }> {
    return { vapid_public_key: (await this.keys.keys()).publicKey };
  }

  async subscribe(command: CommandOf<'push_subscribe'>, session: ClientSession): Promise<PushDevice> {
    // Stored as checked (href), so the push library reads the same host the check did.
    const endpoint = checkSubscription(command.subscription, this.options).href;
    const max = this.options.maxDevices ?? DEFAULT_MAX_DEVICES;
    const stored = await this.deps.store.pushDevices.subscribe(
      {
        device_id: command.device_id,
        device_name: command.device_name,
        principal: session.principal!,
        source: sourceText(session.source),
        person: personOf(session),
        endpoint,
        p256dh: command.subscription.keys.p256dh,
        auth: command.subscription.keys.auth,
        events: command.events ?? { prompt: true, finished: true, failed: true, webhook: true, review: true },
        content_blind: command.content_blind ?? false,
      },
      max,
    );
    // Never a takeover: another person's device id or subscription stays theirs (the owner's too).
    if (stored === 'taken') throw new ServiceError('unauthorized', 'this device (or its push subscription) was subscribed by someone else: they must remove it (push_unsubscribe) first');
    if (stored === 'full') throw new ServiceError('invalid_request', `at most ${max} devices a person may subscribe: remove one (push_unsubscribe) first`);
    this.visibility.nameDevice(session, command.device_id);
    this.log.info('push.subscribed', { device: command.device_id });
    return deviceView(this.deps.store.pushDevices.get(command.device_id)!);
  }

  async settings(command: CommandOf<'push_settings'>, session: ClientSession): Promise<PushDevice> {
    const device = this.requireDevice(command.device_id, session);
    await this.deps.store.pushDevices.updateSettings(device.device_id, {
      device_name: command.device_name ?? device.device_name,
      events: { ...device.events, ...command.events },
      content_blind: command.content_blind ?? device.content_blind,
    });
    return deviceView(this.deps.store.pushDevices.get(command.device_id)!);
  }

  async unsubscribe(deviceId: string, session: ClientSession): Promise<boolean> {
    if (!this.deviceFor(deviceId, session)) return false;
    const removed = await this.deps.store.pushDevices.remove(deviceId);
    if (removed) this.log.info('push.unsubscribed', { device: deviceId });
    return removed;
  }

  /** The owner's clients list every device (to remove a stale one); anyone else only their own. */
  list(session: ClientSession): PushDevice[] {
    return this.deps.store.pushDevices
      .list()
      .filter((device) => mayChange(device, session))
      .map(deviceView);
  }

  /** A password user tests only its own devices: each test rings the phone, and another's is not its to ring. */
  async test(deviceId: string | undefined, session: ClientSession): Promise<PushTestResult[]> {
    const devices = deviceId === undefined ? this.deps.store.pushDevices.list().filter((device) => mayChange(device, session)) : [this.requireDevice(deviceId, session)];
    return Promise.all(
      devices.map(async (device) => {
        const outcome = await this.push(device, { payload: testPayload(device.content_blind), ttl: TEST_TTL_SECONDS, urgency: 'normal', topic: topicOf('test') });
        return { device_id: device.device_id, ok: outcome.ok, status: outcome.status, ...(outcome.error ? { error: outcome.error } : {}) };
      }),
    );
  }

  reportVisibility(session: ClientSession, deviceId: string | undefined, visible: boolean): { device_id: string | null; visible: boolean } {
    // Strictly one's own, the owner included: a page that says another's device is on screen would silence
    // it. The owner, who lists every device, is told so; to anyone else another's id is one like any unknown
    // id (recorded as named, answered alike), and a report counts only for its own person's device
    // (`isVisible` below), so it silences nothing.
    const device = deviceId === undefined ? undefined : this.deps.store.pushDevices.get(deviceId);
    if (device && isOwner(session) && !mayUse(device, ownerOf(session))) throw new ServiceError('unauthorized', 'this device was subscribed by someone else');
    return this.visibility.report(session, deviceId, visible);
  }

  /**
   * The device of this id as the session may see it: the owner any (every device is on the owner's
   * machine: it may clear a stale one), anyone else only its own person's. Another person's device is,
   * to them, no device at all: the same answer as an unknown id (its existence is not told, s36).
   */
  private deviceFor(deviceId: string, session: ClientSession): PushDeviceRow | undefined {
    const device = this.deps.store.pushDevices.get(deviceId);
    return device && mayChange(device, session) ? device : undefined;
  }

  private requireDevice(deviceId: string, session: ClientSession): PushDeviceRow {
    const device = this.deviceFor(deviceId, session);
    if (!device) throw new ServiceError('not_found', `no push device ${deviceId}`);
    return device;
  }

  // ---- Notifier ----

  private observe(event: ServiceEvent, filter: EventFilter): void {
    if (this.stopped) return;
    if (event.event === 'permission.request') this.onPrompt(event, filter);
    else if (event.event === 'permission.resolved') this.onResolved(event.request_id);
    else if (event.event === 'turn.ended') void this.onTurnEnded(event, filter);
    else if (event.event === 'changes.ready') this.onChangesReady(event, filter);
  }

  /** The devices that would have received an event with this filter, as their subscribing client. */
  private recipients(kind: 'prompt' | 'review' | EndedRun['kind'], filter: EventFilter): PushDeviceRow[] {
    return this.deps.store.pushDevices
      .list()
      .filter((device) => device.events[kind] && filter(asClient(device)) && !this.visibility.isVisible(device.device_id, (session) => mayUse(device, ownerOf(session))));
  }

  private onPrompt(event: PermissionRequest, filter: EventFilter): void {
    const devices = this.recipients('prompt', filter);
    if (devices.length === 0) return;
    const expiresAtMs = expiresAtOf(event) ?? Date.now() + this.deps.permissionTimeoutMs();
    this.prompts.set(event.request_id, { conversationId: event.conversation_id, deviceIds: devices.map((d) => d.device_id), expiresAtMs });
    const title = this.deps.store.conversations.get(event.conversation_id)?.title ?? '';
    const ttl = Math.max(0, (expiresAtMs - Date.now()) / 1000);
    for (const device of devices) {
      void this.push(device, { payload: promptPayload(event, title, device.content_blind, this.text), ttl, urgency: 'high', topic: topicOf(promptTag(event.conversation_id)) });
    }
  }

  private onResolved(requestId: string): void {
    const prompt = this.prompts.get(requestId);
    if (!prompt) return;
    this.prompts.delete(requestId);
    // Worth delivering while the prompt could still be shown (its own TTL), and a little after.
    const ttl = Math.max(60, (prompt.expiresAtMs - Date.now()) / 1000);
    for (const deviceId of prompt.deviceIds) {
      const device = this.deps.store.pushDevices.get(deviceId);
      if (!device) continue;
      void this.push(device, { payload: resolvedPayload(prompt.conversationId, requestId, device.content_blind), ttl, urgency: 'normal', topic: topicOf(promptTag(prompt.conversationId)) });
    }
  }

  private async onTurnEnded(event: TurnEnded, filter: EventFilter): Promise<void> {
    if (event.outcome === 'cancelled') return;
    const conversation = this.deps.store.conversations.get(event.conversation_id);
    if (!conversation) return;
    const kind: EndedRun['kind'] = webhookAccountOf(conversation.source) !== undefined ? 'webhook' : event.outcome === 'answered' ? 'finished' : 'failed';
    const devices = this.recipients(kind, filter);
    if (devices.length === 0) return;
    const run: EndedRun = {
      kind,
      conversationId: conversation.id,
      conversationTitle: conversation.title,
      conversationSource: conversation.source,
      text: event.outcome === 'answered' ? await this.lastReply(conversation.id).catch(() => '') : `Failed: ${event.error ?? 'the run failed'}`,
    };
    for (const device of devices) {
      void this.push(device, { payload: runPayload(run, device.content_blind, this.text), ttl: RUN_TTL_SECONDS, urgency: 'normal', topic: topicOf(runTag(conversation.id)) });
    }
  }

  private onChangesReady(event: Extract<ServiceEvent, { event: 'changes.ready' }>, filter: EventFilter): void {
    const conversation = this.deps.store.conversations.get(event.conversation_id);
    if (!conversation) return;
    const ready = { conversationId: conversation.id, conversationTitle: conversation.title, files: event.files, additions: event.additions, deletions: event.deletions };
    for (const device of this.recipients('review', filter)) {
      void this.push(device, { payload: reviewPayload(ready, device.content_blind, this.text), ttl: RUN_TTL_SECONDS, urgency: 'normal', topic: topicOf(reviewTag(conversation.id)) });
    }
  }

  private async lastReply(conversationId: string): Promise<string> {
    return (await this.deps.store.messages.recent(conversationId, { limit: 1 })).find((m) => m.role === 'assistant')?.content ?? '';
  }

  /** One push to one device, after those queued before it; its outcome recorded (or the device dropped when gone). */
  private push(device: PushDeviceRow, message: PushMessage): Promise<DeliveryOutcome> {
    const work = this.perDevice.run(device.device_id, async () => {
      const outcome = await this.sender.deliver(device, message);
      await this.record(device, message.payload.kind, outcome);
      return outcome;
    });
    this.inFlight.add(work);
    const forget = () => this.inFlight.delete(work);
    work.then(forget, forget);
    return work.catch((error: unknown) => {
      this.log.error('push.crashed', { device: device.device_id, error });
      return { ok: false, status: null, error: 'internal error', gone: false };
    });
  }

  private async record(device: PushDeviceRow, kind: PushKind, outcome: DeliveryOutcome): Promise<void> {
    if (this.closed) return;
    const fields = { device: device.device_id, kind, status: outcome.status };
    if (outcome.gone) {
      this.log.info('push.subscription_gone', fields);
      await this.deps.store.pushDevices.remove(device.device_id, device.endpoint);
      return;
    }
    if (outcome.ok) this.log.debug('push.delivered', fields);
    else this.log.warn('push.failed', { ...fields, error: outcome.error });
    await this.deps.store.pushDevices.recordDelivery(device.device_id, device.endpoint, {
      at: new Date().toISOString(),
      ok: outcome.ok,
      status: outcome.status,
      ...(outcome.error ? { error: outcome.error } : {}),
    });
  }
}

/** The person of a session, as push-devices.ts mayUse reads it. */
function ownerOf(session: ClientSession): { person: string; principal?: 'access' | 'session' } {
  return { person: personOf(session), principal: session.principal };
}

/** A device's own person may change it, and so may the owner (every device is on the owner's machine). */
function mayChange(device: PushDeviceRow, session: ClientSession): boolean {
  return isOwner(session) || mayUse(device, ownerOf(session));
}

/** A device as the client that subscribed it, for the event filters (could it have answered this prompt?). */
function asClient(device: PushDeviceRow): ClientSession {
  const username = device.person?.startsWith('user:') ? device.person.slice('user:'.length) : undefined;
  return {
    id: `push:${device.device_id}`,
    source: sourceOf(device.source),
    principal: device.principal,
    ...(username === undefined ? {} : { username }),
    canAnswerPermissions: true,
    send: () => undefined,
  };
}

/** When the request expires, where the event says so (`expires_at`, docs/protocol.md). */
function expiresAtOf(event: PermissionRequest): number | undefined {
  const at = (event as { expires_at?: unknown }).expires_at;
  const ms = typeof at === 'string' ? Date.parse(at) : NaN;
  return Number.isFinite(ms) ? ms : undefined;
}
