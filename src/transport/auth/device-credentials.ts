import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { DevicesRepo, DeviceRow } from '../../store';
import type { PairingSecrets } from '../pairing/pairing-secrets';
import { devicePairedEntry } from '../../commands/audit-records';

export const tokenHash = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

const DEVICE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Each paired phone's own credential (docs/protocol.md, "Devices"): a one-time pairing secret is spent
 * for a random device token, stored only as its SHA-256 digest. Revoking the device (removing its row)
 * ends the credential; sockets opened with it are re-checked and closed.
 */
export class DeviceCredentials {
  constructor(
    private readonly repo: DevicesRepo,
    readonly pairings: PairingSecrets,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Spends `secret` for a new device (null when the secret is not live). The page's own `device_id`
   * (its Web Push id) is kept when valid and free, so its push subscription belongs to the device.
   * `clientKey`: the relayed phone's end-to-end key, unregistered when the device is revoked. The pairing
   * is recorded in the audit log with the device's row (`address`: where the phone connected from).
   */
  async pair(request: {
    secret: string;
    deviceId?: string;
    deviceName?: string;
    via: DeviceRow['via'];
    clientKey?: string;
    address?: string;
  }): Promise<{ device_id: string; device_token: string } | null> {
    if (!this.pairings.spend(request.secret)) return null;
    const token = randomBytes(32).toString('base64url');
    const wanted = request.deviceId && DEVICE_ID.test(request.deviceId) ? request.deviceId : undefined;
    const row = {
      device_name: (request.deviceName?.trim() || `phone (${request.via})`).slice(0, 100),
      token_hash: tokenHash(token),
      paired_at: new Date(this.now()).toISOString(),
      via: request.via,
      client_key: request.clientKey ?? null,
    };
    const add = (deviceId: string) => this.repo.add({ ...row, device_id: deviceId }, devicePairedEntry({ ...row, device_id: deviceId }, request.address));
    if (!(wanted && (await add(wanted)))) {
      const deviceId = randomUUID();
      await add(deviceId);
      return { device_id: deviceId, device_token: token };
    }
    return { device_id: wanted, device_token: token };
  }

  /** The device a token belongs to, if any, by the token's digest (`tokenHash`, which the caller has already made). */
  deviceOf(digest: string): DeviceRow | undefined {
    return this.repo.byTokenHash(digest);
  }

  /** Whether the device still exists with that credential (false once revoked). */
  isLive(deviceId: string, hash: string): boolean {
    return this.repo.tokenHashOf(deviceId) === hash;
  }

  /** Records when the device last authenticated (best effort: a failed write loses only the time). */
  seen(deviceId: string): void {
    this.repo.touch(deviceId, new Date(this.now()).toISOString()).catch(() => undefined);
  }
}
