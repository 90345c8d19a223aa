import { bareCommandOf, Command, isBareCommand, ServiceError, describeZodError, fail, ok, requestIdOf, type Envelope, type RequestId } from '../protocol';
import type { CommandContext } from './context';
import { handlers } from './handlers';
import { requireOwnerFor } from './roles';
import type { ClientSession } from './session';

export type Dispatch = (frame: unknown, session: ClientSession) => Promise<Envelope>;

/**
 * Each command's own schema by type (one zod parse a frame, no union search), and whether it has no field
 * but type and id (bare: read without zod, bareCommandOf, the same verdict). One lookup a frame.
 */
const commandTypes = new Map(Command.options.map((schema) => [schema.shape.type.value as string, { schema, bare: isBareCommand(schema) }]));

/** Turns anything thrown by a handler into an error envelope that is safe to show a client. */
export function errorEnvelope(error: unknown, id: RequestId | undefined, ctx: Pick<CommandContext, 'logger'>): Envelope {
  if (error instanceof ServiceError) return fail(error.code, error.message, id);
  ctx.logger.error('command.failed', { error });
  return fail('server_error', 'internal error', id);
}

/**
 * The one entry of every transport: a parsed frame in, one envelope out. The frame is validated here
 * (zod), so handlers receive typed commands.
 */
export function createDispatcher(ctx: CommandContext): Dispatch {
  // Not an async function: the handler's promise is answered by one then() (an await more a command was a
  // measurable part of a get_config round trip, issue 25).
  return (frame, session) => {
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) {
      return Promise.resolve(fail('invalid_request', 'a command must be a JSON object'));
    }
    const { type } = frame as { type?: unknown };
    if (typeof type !== 'string') return Promise.resolve(fail('invalid_request', 'invalid command: type must be a string naming the command', requestIdOf(frame)));
    const known = commandTypes.get(type);
    if (!known) return Promise.resolve(fail('invalid_request', `unknown command type: ${type.slice(0, 64)}`, requestIdOf(frame)));
    let command = (known.bare ? bareCommandOf(type, frame) : undefined) as Command | undefined;
    if (!command) {
      const parsed = known.schema.safeParse(frame);
      if (!parsed.success) return Promise.resolve(fail('invalid_request', `invalid ${type}: ${describeZodError(parsed.error)}`, requestIdOf(frame)));
      command = parsed.data as Command;
    }
    const id = command.id;
    const failed = (error: unknown) => errorEnvelope(error, id, ctx);
    try {
      requireOwnerFor(command.type, session);
      const handler = handlers[command.type] as (c: Command, s: ClientSession, x: CommandContext) => Promise<object>;
      return handler(command, session, ctx).then((result) => ok(result, id), failed);
    } catch (error) {
      return Promise.resolve(failed(error));
    }
  };
}
