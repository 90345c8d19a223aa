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
}

const COLUMNS = 'device_id, device_name, token_hash, paired_at, last_seen, via';

/** The paired devices, one row per device; removing a row ends its credential. */
export class DevicesRepo {
  constructor(private readonly db: Database) {}

  get(deviceId: string): DeviceRow | undefined {
    return this.db.get<DeviceRow>(`SELECT ${COLUMNS} FROM devices WHERE device_id = ?`, [deviceId]);
  }

  byTokenHash(tokenHash: string): DeviceRow | undefined {
    return this.db.get<DeviceRow>(`SELECT ${COLUMNS} FROM devices WHERE token_hash = ?`, [tokenHash]);
  }

  /** Oldest first. */
  list(): DeviceRow[] {
    return this.db.all<DeviceRow>(`SELECT ${COLUMNS} FROM devices ORDER BY paired_at, device_id`);
  }

  /** Stores a new device; false when its id is taken. */
  add(device: Omit<DeviceRow, 'last_seen'>): Promise<boolean> {
    return this.db.write((tx) => {
      if (tx.get('SELECT 1 AS x FROM devices WHERE device_id = ?', [device.device_id]) !== undefined) return false;
      tx.run(`INSERT INTO devices (${COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?)`, [device.device_id, device.device_name, device.token_hash, device.paired_at, device.via]);
      return true;
    });
  }

  touch(deviceId: string, at: string = new Date().toISOString()): Promise<void> {
    return this.db.write((tx) => {
      tx.run('UPDATE devices SET last_seen = ? WHERE device_id = ?', [at, deviceId]);
    });
  }

  remove(deviceId: string): Promise<boolean> {
    return this.db.write((tx) => tx.run('DELETE FROM devices WHERE device_id = ?', [deviceId]).changes > 0);
  }
}
