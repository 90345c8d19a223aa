import { ServiceError, type CommandOf, type ResultOf } from '../protocol';
import type { CommandContext } from './context';
import { readDurable } from './durable-read';
import type { ClientSession } from './session';
import { actorOf } from './audit-actor';
import { deviceRevokedEntry } from './audit-records';

// Paired devices (docs/protocol.md, "Devices"): the owner's business only, checked by the dispatcher
// (roles.ts, OWNER_ONLY_COMMANDS); a session (password) user is `unauthorized`.

export async function listDevices(_command: CommandOf<'list_devices'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'list_devices'>> {
  const devices = ctx.store.devices.list().map((d) => ({
    device_id: d.device_id,
    device_name: d.device_name,
    paired_at: d.paired_at,
    last_seen: d.last_seen,
    via: d.via,
    push: ctx.store.pushDevices.get(d.device_id) !== undefined,
  }));
  await readDurable(ctx.store);
  return { devices };
}

/**
 * Ends a device's credential, removes its push subscription, and closes its open sockets at once (4401):
 * every session re-checks its credential, and only the revoked device's fail.
 */
export async function revokeDevice(command: CommandOf<'revoke_device'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'revoke_device'>> {
  const by = actorOf(session, ctx.store.devices);
  const revoked = await ctx.store.devices.remove(command.device_id, (device) => deviceRevokedEntry(by, device));
  if (!revoked) throw new ServiceError('not_found', `no paired device ${command.device_id}`);
  await ctx.store.pushDevices.remove(command.device_id);
  ctx.logger.info('devices.revoked', { device: command.device_id });
  ctx.events.recheckAll();
  return { revoked };
}

/** A one-time pairing secret for a phone on the LAN (the owner's, like create_pairing). */
export async function createLanPairing(_command: CommandOf<'create_lan_pairing'>, _session: ClientSession, ctx: CommandContext): Promise<ResultOf<'create_lan_pairing'>> {
  return ctx.relay.createLanPairing();
}
