import { Command, FrameHead, ServiceError, commandTypes, describeZodError, fail, ok, requestIdOf, type Envelope, type RequestId } from '../protocol';
import type { CommandContext } from './context';
import { handlers } from './handlers';
import type { ClientSession } from './session';

export type Dispatch = (frame: unknown, session: ClientSession) => Promise<Envelope>;

const knownTypes = new Set<string>(commandTypes);

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
  return async (frame, session) => {
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) {
      return fail('invalid_request', 'a command must be a JSON object');
    }
    const head = FrameHead.safeParse(frame);
    if (!head.success) return fail('invalid_request', `invalid command: ${describeZodError(head.error)}`, requestIdOf(frame));
    const { type, id } = head.data;
    if (!knownTypes.has(type)) return fail('invalid_request', `unknown command type: ${type.slice(0, 64)}`, id);
    const parsed = Command.safeParse(frame);
    if (!parsed.success) return fail('invalid_request', `invalid ${type}: ${describeZodError(parsed.error)}`, id);
    try {
      const handler = handlers[parsed.data.type] as (c: Command, s: ClientSession, x: CommandContext) => Promise<Record<string, unknown>>;
      return ok(await handler(parsed.data, session, ctx), id);
    } catch (error) {
      return errorEnvelope(error, id, ctx);
    }
  };
}
