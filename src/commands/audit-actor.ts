import type { AuditActor, AuditPlace } from '../protocol';
import { sourceLabel } from '../protocol/sources';
import type { DevicesRepo } from '../store';
import type { ClientSession } from './session';

/** The CLI acting on a data directory (a backup or restore with no service running). */
export const CLI_ACTOR: AuditActor = { person: { kind: 'cli', name: 'command line' }, place: { via: 'cli' } };
/** The service acting on its own (a maintenance pass, a turn's own work). */
export const SERVICE_ACTOR: AuditActor = { person: { kind: 'service', name: 'service' }, place: { via: 'service' } };
/** service.json changed on disk, not through the service: whoever can write the file, the owner. */
export const FILE_EDIT_ACTOR: AuditActor = { person: { kind: 'owner', name: 'service.json edited on disk' }, place: { via: 'service' } };

/** Where a session comes from: its source and address. */
function placeOf(session: Pick<ClientSession, 'source' | 'address'>): AuditPlace {
  const address = session.address !== undefined ? { address: session.address } : {};
  switch (session.source.kind) {
    case 'editor':
    case 'webhook':
      return { via: session.source.kind };
    case 'relay':
    case 'lan':
      return { via: session.source.kind, ...address };
  }
}

/**
 * Who a session is and where it is, as the audit log records them (the one place this is worked out):
 * a paired device by its name, a password user by username, the editor, a webhook account, or the
 * holder of the access token. Not protocol/sources.ts `personOf` (whose things are whose: every paired
 * device is the owner there); the record names the device that acted.
 */
export function actorOf(session: Pick<ClientSession, 'source' | 'address' | 'principal' | 'deviceId' | 'username'>, devices?: Pick<DevicesRepo, 'get'>): AuditActor {
  const place = placeOf(session);
  if (session.source.kind === 'webhook') return { person: { kind: 'webhook', name: session.source.account }, place };
  if (session.deviceId !== undefined) {
    const name = devices?.get(session.deviceId)?.device_name ?? session.deviceId;
    return { person: { kind: 'device', name }, place };
  }
  if (session.principal === 'session') return { person: { kind: 'user', name: session.username ?? 'password user' }, place };
  if (session.source.kind === 'editor') return { person: { kind: 'editor', name: 'editor' }, place };
  return { person: { kind: 'owner', name: 'access token' }, place };
}

/**
 * A session as people read it where it acted ("Allowed from Pixel 8", "from Pixel 8" under a message, a
 * conversation's `started_by`): who it is, as the audit log names it: a paired device by its name, a
 * password user by username, `editor`, `access token` for a script or client holding the service's
 * access token (not the transport's `LAN`: a paired phone is on the LAN too); a webhook account by its
 * source's label.
 */
export function sessionLabel(session: Pick<ClientSession, 'source' | 'address' | 'principal' | 'deviceId' | 'username'>, devices?: Pick<DevicesRepo, 'get'>): string {
  const { person } = actorOf(session, devices);
  return person.kind === 'webhook' ? sourceLabel(session.source) : person.name;
}
