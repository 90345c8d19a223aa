import { ServiceError, type CommandOf, type CommandType, type ResultOf } from '../protocol';
import type { CommandContext } from './context';
import { readDurable } from './durable-read';
import type { ClientSession } from './session';

type PushCommandType = Exclude<Extract<CommandType, `push_${string}` | 'list_push_devices' | 'client_state'>, 'push_changes'>;
type PushHandler<T extends PushCommandType> = (command: CommandOf<T>, session: ClientSession, ctx: CommandContext) => Promise<ResultOf<T>>;

/**
 * Devices are a person's: a user client (the access token, a password user, the editor) may use Web
 * Push; a webhook account (nobody behind it) may not.
 */
function requireUserClient(session: ClientSession): void {
  if (session.source.kind === 'webhook' || session.principal === undefined) {
    throw new ServiceError('unauthorized', 'Web Push is for user clients: a webhook account has no device');
  }
}

function forUsers<T extends PushCommandType>(handler: PushHandler<T>): PushHandler<T> {
  return (command, session, ctx) => {
    requireUserClient(session);
    return handler(command, session, ctx);
  };
}

/** The Web Push commands (docs/protocol.md, "Web Push"). */
export const pushHandlers: { [T in PushCommandType]: PushHandler<T> } = {
  push_info: forUsers(async (_command, _session, ctx) => ctx.push.info()),
  push_subscribe: forUsers(async (command, session, ctx) => ({ device: await ctx.push.subscribe(command, session) })),
  push_settings: forUsers(async (command, session, ctx) => ({ device: await ctx.push.settings(command, session) })),
  push_unsubscribe: forUsers(async (command, session, ctx) => ({ removed: await ctx.push.unsubscribe(command.device_id, session) })),
  list_push_devices: forUsers(async (_command, session, ctx) => {
    const devices = ctx.push.list(session);
    await readDurable(ctx.store);
    return { devices };
  }),
  push_test: forUsers(async (command, session, ctx) => ({ results: await ctx.push.test(command.device_id, session) })),
  client_state: forUsers(async (command, session, ctx) => ctx.push.reportVisibility(session, command.device_id, command.visible)),
};
