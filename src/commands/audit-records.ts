import { isDeepStrictEqual } from 'node:util';
import type { AuditActor, ServiceConfig } from '../protocol';
import type { DeviceRow, NewAuditEntry } from '../store';

/**
 * The audit log's entries for acts the commands and transports see (docs/protocol.md, "Audit log"):
 * each says who and where (the actor), what, and facts that are never a secret's value.
 */

/** Settings with an entry of their own kind; every other changed setting is named in one `config.changed`. */
const OWN_KIND_FIELDS = new Set(['permission_mode', 'permission_rules']);

const added = (before: readonly string[], after: readonly string[]) => after.filter((x) => !before.includes(x));

/**
 * A change of service.json: the permission mode's change, each rule added or removed, and the other
 * settings by name only (an api_key's, a token's or a user's password hash's value never appears).
 */
export function configChangeEntries(fields: readonly string[], previous: ServiceConfig, next: ServiceConfig, by: AuditActor): NewAuditEntry[] {
  const entries: NewAuditEntry[] = [];
  if (previous.permission_mode !== next.permission_mode) {
    entries.push({
      kind: 'mode.changed',
      ...by,
      summary: `Permission mode ${previous.permission_mode} → ${next.permission_mode}`,
      detail: { mode_from: previous.permission_mode, mode_to: next.permission_mode },
    });
  }
  for (const effect of ['allow', 'deny'] as const) {
    const before = previous.permission_rules[effect];
    const after = next.permission_rules[effect];
    for (const rule of added(before, after)) entries.push({ kind: 'rule.added', ...by, summary: `Added ${effect} rule ${rule}`, detail: { effect, rule } });
    for (const rule of added(after, before)) entries.push({ kind: 'rule.removed', ...by, summary: `Removed ${effect} rule ${rule}`, detail: { effect, rule } });
  }
  const others = fields.filter((field) => !OWN_KIND_FIELDS.has(field) && !isDeepStrictEqual((previous as Record<string, unknown>)[field], (next as Record<string, unknown>)[field]));
  if (others.length > 0) {
    const names = (config: ServiceConfig) => config.users.map((u) => u.username);
    const usersAdded = added(names(previous), names(next));
    const usersRemoved = added(names(next), names(previous));
    entries.push({
      kind: 'config.changed',
      ...by,
      summary: `Changed ${others.join(', ')}`,
      detail: { fields: others, ...(usersAdded.length > 0 ? { users_added: usersAdded } : {}), ...(usersRemoved.length > 0 ? { users_removed: usersRemoved } : {}) },
    });
  }
  return entries;
}

/** A backup written (by the running service's `backup` command or the CLI). */
export function backupEntry(by: AuditActor, target: string, files: number): NewAuditEntry {
  return { kind: 'backup', ...by, summary: `Backup written to ${target} (${files} files)`, detail: { path: target, files } };
}

/** A data directory restored from a backup (recorded in the restored store). */
export function restoreEntry(by: AuditActor, backup: string, backupCreatedAt: string | undefined, files: number): NewAuditEntry {
  return { kind: 'restore', ...by, summary: `Restored from the backup ${backup}`, detail: { backup, backup_created_at: backupCreatedAt ?? null, files } };
}

/** A person signed in: a password user by POST /auth, or a paired device connecting. */
export function loginEntry(by: AuditActor, how: 'password' | 'device'): NewAuditEntry {
  return { kind: 'login', ...by, summary: how === 'password' ? `${by.person.name} signed in with a password` : `${by.person.name} connected`, detail: { method: how } };
}

/** Fewer failed logins than this in a window are not worth an entry (a mistyped password). */
export const AUDIT_BURST_MIN_COUNT = 5;

/**
 * Failed logins of one kind from one address in one window, counted (login-failures.ts): one entry per
 * window, however many there were; none for a few, nor for connections that only timed out.
 */
export function loginBurstEntry(burst: { address: string; kind: string; count: number; refused: number; window_seconds: number; since: string }): NewAuditEntry | undefined {
  if (burst.count < AUDIT_BURST_MIN_COUNT || burst.kind === 'timeout') return undefined;
  return {
    kind: 'login.failed_burst',
    person: { kind: 'service', name: 'unknown' },
    place: { via: burst.address.startsWith('relay:') ? 'relay' : 'lan', address: burst.address },
    summary: `${burst.count} failed logins (${burst.kind}) from ${burst.address} in ${burst.window_seconds} s`,
    detail: { count: burst.count, refused: burst.refused, login: burst.kind, window_seconds: burst.window_seconds, since: burst.since },
  };
}

/** A phone paired: the device itself spent a pairing secret (the owner made the secret). */
export function devicePairedEntry(device: Pick<DeviceRow, 'device_id' | 'device_name' | 'via'>, address: string | undefined): NewAuditEntry {
  return {
    kind: 'device.paired',
    person: { kind: 'device', name: device.device_name },
    place: { via: device.via, ...(address !== undefined ? { address } : {}) },
    summary: `Paired ${device.device_name} (${device.via === 'relay' ? 'through the relay' : 'on the LAN'})`,
    detail: { device_id: device.device_id, device_name: device.device_name, via: device.via },
  };
}

/** A paired device's credential ended. */
export function deviceRevokedEntry(by: AuditActor, device: Pick<DeviceRow, 'device_id' | 'device_name' | 'via'>): NewAuditEntry {
  return { kind: 'device.revoked', ...by, summary: `Revoked ${device.device_name}`, detail: { device_id: device.device_id, device_name: device.device_name, via: device.via } };
}
