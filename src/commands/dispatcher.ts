import type * as z from 'zod';
import { bareCommandOf, type Command, CommandSchemas, type CommandType, isBareCommand, ServiceError, describeZodError, fail, ok, requestIdOf, type Envelope, type RequestId } from '../protocol';
import { firstCodePoints } from '../protocol/code-points';
import type { CommandContext } from './context';
import { handlers } from './handlers';
import { requireOwnerFor } from './roles';
import type { ClientSession } from './session';

export type Dispatch = (frame: unknown, session: ClientSession) => Promise<Envelope>;

/** A command's schema and whether it has no field but type and id (bare: read without zod, bareCommandOf, the same verdict). */
interface KnownCommand {
  schema: z.ZodType;
  bare: boolean;
}

/**
 * Each command's own schema by type (one zod parse a frame, no union search), found the first time a
 * frame of that type comes: only then is its schema built (a lazySchema), so a start builds the few a
 * client sends first (auth, get_config), not the protocol's hundreds.
 */
const commandTypes = new Map<string, KnownCommand>();
function knownCommand(type: string): KnownCommand | undefined {
  const known = commandTypes.get(type);
  if (known || !Object.hasOwn(CommandSchemas, type)) return known;
  const schema = CommandSchemas[type as CommandType];
  const made = { schema, bare: isBareCommand(schema) };
  commandTypes.set(type, made);
  return made;
}

/**
 * A frame as the typed command it is, or the error envelope refusing it (a command has a `type`, an
 * envelope none): the dispatcher's validation, which the warm-up's practice turn runs its own
 * chat frame through too (commands/turns/practice-turn.ts).
 */
export function commandOf(frame: unknown): Command | Envelope {
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) return fail('invalid_request', 'a command must be a JSON object');
  const { type } = frame as { type?: unknown };
  if (typeof type !== 'string') return fail('invalid_request', 'invalid command: type must be a string naming the command', requestIdOf(frame));
  const known = knownCommand(type);
  if (!known) return fail('invalid_request', `unknown command type: ${firstCodePoints(type, 64)}`, requestIdOf(frame));
  if (known.bare) {
    const bare = bareCommandOf(type, frame) as Command | undefined;
    if (bare) return bare;
  }
  const parsed = known.schema.safeParse(frame);
  if (!parsed.success) return fail('invalid_request', `invalid ${type}: ${describeZodError(parsed.error)}`, requestIdOf(frame));
  return parsed.data as Command;
}

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
    let command: Command | Envelope;
    try {
      command = commandOf(frame);
    } catch (error) {
      // A schema whose build throws (built at its type's first frame, protocol/lazy-schema.ts): a bug of
      // ours, answered as one rather than left unanswered.
      return Promise.resolve(errorEnvelope(error, requestIdOf(frame), ctx));
    }
    if (!('type' in command)) return Promise.resolve(command);
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
