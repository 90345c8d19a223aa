import type { Database } from './database';

/** Which notifications a device wants (protocol PushEventToggles). */
export interface PushDeviceEvents {
  prompt: boolean;
  finished: boolean;
  failed: boolean;
  webhook: boolean;
  review: boolean;
}

export interface PushDeliveryRecord {
  at: string;
  ok: boolean;
  status: number | null;
  error?: string;
}

export interface PushDeviceRow {
  device_id: string;
  device_name: string;
  /** How the subscribing client authenticated: decides which prompts it is pushed (those it could answer). */
  principal: 'access' | 'session';
  /** The subscribing client's source (`ws`, `relay`, `editor`). */
  source: string;
  /**
   * Whose device it is (protocol/sources.ts personOf): only they re-subscribe, rename, silence or report
   * on it. Null for a device a password user subscribed before people were told apart: the first
   * password user to subscribe it again takes it.
   */
  person: string | null;
  created_at: string;
  updated_at: string;
  /** The push service's URL for this subscription: a capability (anyone holding it may push), never shown whole. */
  endpoint: string;
  p256dh: string;
  auth: string;
  events: PushDeviceEvents;
  content_blind: boolean;
  last_delivery: PushDeliveryRecord | null;
  /** Failed deliveries in a row. */
  failures: number;
}

export type NewPushDevice = Omit<PushDeviceRow, 'created_at' | 'updated_at' | 'last_delivery' | 'failures'>;

interface StoredRow extends Omit<PushDeviceRow, 'events' | 'content_blind' | 'last_delivery'> {
  events: string;
  content_blind: number;
  last_delivery: string | null;
}

const COLUMNS = 'device_id, device_name, principal, source, person, created_at, updated_at, endpoint, p256dh, auth, events, content_blind, last_delivery, failures';

function fromStored(row: StoredRow): PushDeviceRow {
  return {
    ...row,
    // A device subscribed before `review` existed wants it, as every kind is wanted by default.
    events: { review: true, ...(JSON.parse(row.events) as Omit<PushDeviceEvents, 'review'>) },
    content_blind: row.content_blind === 1,
    last_delivery: row.last_delivery === null ? null : (JSON.parse(row.last_delivery) as PushDeliveryRecord),
  };
}

/**
 * Whether a device is this person's own: theirs, or (subscribed by a password user before people were
 * told apart: person null) any password user's, as it was then, until one subscribes it again.
 */
export function mayUse(device: { person: string | null }, client: { person: string; principal?: 'access' | 'session' }): boolean {
  return device.person === null ? client.principal === 'session' : device.person === client.person;
}

/** The devices subscribed to Web Push (docs/protocol.md, "Web Push"), one row per device. */
export class PushDevicesRepo {
  constructor(private readonly db: Database) {}

  get(deviceId: string): PushDeviceRow | undefined {
    const row = this.db.get<StoredRow>(`SELECT ${COLUMNS} FROM push_devices WHERE device_id = ?`, [deviceId]);
    return row && fromStored(row);
  }

  /** Oldest first. */
  list(): PushDeviceRow[] {
    return this.db.all<StoredRow>(`SELECT ${COLUMNS} FROM push_devices ORDER BY created_at, device_id`).map(fromStored);
  }

  /**
   * Stores a device, or replaces an existing device's subscription (its name and settings as given;
   * `created_at` kept; the delivery record starts over, the subscription being new). All in one
   * transaction: `taken` when the device id, or the endpoint, is another person's (mayUse); `full` for a
   * new device beyond `maxDevices` of this person's.
   */
  subscribe(device: NewPushDevice & { person: string }, maxDevices: number, now: string = new Date().toISOString()): Promise<'stored' | 'taken' | 'full'> {
    return this.db.write((tx) => {
      const claimant = { person: device.person, principal: device.principal };
      const existing = tx.get<{ person: string | null }>('SELECT person FROM push_devices WHERE device_id = ?', [device.device_id]);
      if (existing && !mayUse(existing, claimant)) return 'taken';
      const sameEndpoint = tx.all<{ person: string | null }>('SELECT person FROM push_devices WHERE endpoint = ? AND device_id <> ?', [device.endpoint, device.device_id]);
      if (sameEndpoint.some((other) => other.person !== device.person)) return 'taken';
      // Counted per person: another's devices neither fill one's own bound nor show through it (s36).
      const count = tx.all<{ person: string | null }>('SELECT person FROM push_devices').filter((row) => mayUse(row, claimant)).length;
      if (!existing && count >= maxDevices) return 'full';
      tx.run(
        `INSERT INTO push_devices (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0)
         ON CONFLICT (device_id) DO UPDATE SET device_name = excluded.device_name, principal = excluded.principal, source = excluded.source,
           person = excluded.person, updated_at = excluded.updated_at, endpoint = excluded.endpoint, p256dh = excluded.p256dh, auth = excluded.auth,
           events = excluded.events, content_blind = excluded.content_blind, last_delivery = NULL, failures = 0`,
        [
          device.device_id,
          device.device_name,
          device.principal,
          device.source,
          device.person,
          now,
          now,
          device.endpoint,
          device.p256dh,
          device.auth,
          JSON.stringify(device.events),
          device.content_blind ? 1 : 0,
        ],
      );
      return 'stored';
    });
  }

  /** Changes a device's name, toggles or content-blind mode; false when it does not exist. */
  async updateSettings(deviceId: string, settings: { device_name: string; events: PushDeviceEvents; content_blind: boolean }, now: string = new Date().toISOString()): Promise<boolean> {
    return this.db.write(
      (tx) =>
        tx.run('UPDATE push_devices SET device_name = ?, events = ?, content_blind = ?, updated_at = ? WHERE device_id = ?', [
          settings.device_name,
          JSON.stringify(settings.events),
          settings.content_blind ? 1 : 0,
          now,
          deviceId,
        ]).changes > 0,
    );
  }

  /**
   * How a delivery went. Only if the device still has the subscription it was sent to: one replaced
   * meanwhile (the page subscribed again) is not charged with the old one's outcome.
   */
  recordDelivery(deviceId: string, endpoint: string, outcome: PushDeliveryRecord): Promise<void> {
    return this.db.write((tx) => {
      tx.run(`UPDATE push_devices SET last_delivery = ?, failures = CASE WHEN ? THEN 0 ELSE failures + 1 END WHERE device_id = ? AND endpoint = ?`, [
        JSON.stringify(outcome),
        outcome.ok ? 1 : 0,
        deviceId,
        endpoint,
      ]);
    });
  }

  /** Removes a device; with `endpoint`, only while it still has that subscription (a push service said it is gone). */
  remove(deviceId: string, endpoint?: string): Promise<boolean> {
    return this.db.write((tx) =>
      endpoint === undefined
        ? tx.run('DELETE FROM push_devices WHERE device_id = ?', [deviceId]).changes > 0
        : tx.run('DELETE FROM push_devices WHERE device_id = ? AND endpoint = ?', [deviceId, endpoint]).changes > 0,
    );
  }
}
