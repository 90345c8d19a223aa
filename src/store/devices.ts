import type { AuditRepo, NewAuditEntry } from './audit';
import type { Database } from './database';

/** A phone paired with this machine (docs/protocol.md, "Devices"): its own credential, stored only as a digest. */
export interface DeviceRow {
  device_id: string;
  device_name: string;
  /** SHA-256 of the device token, hex. */
  token_hash: string;
  paired_at: string;
  last_seen: string | null;
  via: 'lan' | 'relay';
  /** The end-to-end client key a phone paired through the relay proved (docs/relay.md §Pairing); null on the LAN. */
  client_key: string | null;
}

const COLUMNS = 'device_id, device_name, token_hash, paired_at, last_seen, via, client_key';

/** The paired devices, one row per device; removing a row ends its credential. */
export class DevicesRepo {
  /**
   * Each device's token digest, kept in memory (all writes go through this repo): a device's socket
   * re-checks its credential before each command and event, so that check must not query the database.
   */
  private hashes: Map<string, string> | undefined;
  /** The same, the other way round: a token is looked up by its digest without a query (a burst of wrong tokens costs no database work). */
  private devicesByHash: Map<string, string> | undefined;

  constructor(
    private readonly db: Database,
    private readonly audit: Pick<AuditRepo, 'record'>,
  ) {}

  /** The token digest of a device, or undefined once it is revoked (or never existed). */
  tokenHashOf(deviceId: string): string | undefined {
    return this.digests().hashes.get(deviceId);
  }

  private digests(): { hashes: Map<string, string>; devicesByHash: Map<string, string> } {
    if (!this.hashes || !this.devicesByHash) {
      const rows = this.db.all<{ device_id: string; token_hash: string }>('SELECT device_id, token_hash FROM devices');
      this.hashes = new Map(rows.map((r) => [r.device_id, r.token_hash]));
      this.devicesByHash = new Map(rows.map((r) => [r.token_hash, r.device_id]));
    }
    return { hashes: this.hashes, devicesByHash: this.devicesByHash };
  }

  get(deviceId: string): DeviceRow | undefined {
    return this.db.get<DeviceRow>(`SELECT ${COLUMNS} FROM devices WHERE device_id = ?`, [deviceId]);
  }

  byTokenHash(tokenHash: string): DeviceRow | undefined {
    const deviceId = this.digests().devicesByHash.get(tokenHash);
    return deviceId === undefined ? undefined : this.get(deviceId);
  }

  /** Oldest first. */
  list(): DeviceRow[] {
    return this.db.all<DeviceRow>(`SELECT ${COLUMNS} FROM devices ORDER BY paired_at, device_id`);
  }

  /** Stores a new device, with its pairing's audit entry in the same transaction; false when its id is taken. */
  async add(device: Omit<DeviceRow, 'last_seen'>, audit?: NewAuditEntry): Promise<boolean> {
    const added = await this.db.write((tx) => {
      if (tx.get('SELECT 1 AS x FROM devices WHERE device_id = ?', [device.device_id]) !== undefined) return false;
      tx.run(`INSERT INTO devices (${COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?, ?)`, [device.device_id, device.device_name, device.token_hash, device.paired_at, device.via, device.client_key]);
      if (audit) this.audit.record(tx, audit);
      return true;
    });
    if (added) {
      this.hashes?.set(device.device_id, device.token_hash);
      this.devicesByHash?.set(device.token_hash, device.device_id);
    }
    return added;
  }

  touch(deviceId: string, at: string = new Date().toISOString()): Promise<void> {
    return this.db.write((tx) => {
      tx.run('UPDATE devices SET last_seen = ? WHERE device_id = ?', [at, deviceId]);
    });
  }

  /**
   * Ends the device's credential and, for a phone paired through the relay, its relay access: its client
   * key is unregistered (registrations), so the machine refuses that key's tunnel before any `auth`,
   * unless another device still uses the same key. `audit(row)`: the revocation's entry, recorded in the same transaction.
   */
  async remove(deviceId: string, audit?: (device: DeviceRow) => NewAuditEntry): Promise<boolean> {
    // Forgotten first: from now on no command or event passes its sockets' re-check, and its token no `auth`.
    const hash = this.hashes?.get(deviceId);
    this.hashes?.delete(deviceId);
    if (hash !== undefined) this.devicesByHash?.delete(hash);
    return this.db.write((tx) => {
      const row = tx.get<DeviceRow>(`SELECT ${COLUMNS} FROM devices WHERE device_id = ?`, [deviceId]);
      if (!row) return false;
      tx.run('DELETE FROM devices WHERE device_id = ?', [deviceId]);
      if (audit) this.audit.record(tx, audit(row));
      const key = row.client_key;
      if (key && tx.get('SELECT 1 AS x FROM devices WHERE client_key = ?', [key]) === undefined) tx.run('DELETE FROM registrations WHERE public_key = ?', [key]);
      return true;
    });
  }
}
