import { sourceLabel } from '../protocol/sources';
import type { CommandOf, ResultOf } from '../protocol';
import type { CommandContext } from './context';
import type { ClientSession } from './session';

// What the agent is given besides the conversation (docs/protocol.md, "The agent's context").

/** Who sent a message, as the model's environment block says it: the source, and a paired phone's name. */
export function clientLabel(session: ClientSession, ctx: Pick<CommandContext, 'store'>): string {
  const device = session.deviceId === undefined ? undefined : ctx.store.devices.get(session.deviceId);
  return device ? `${sourceLabel(session.source)}, device “${device.device_name}”` : sourceLabel(session.source);
}

export const agentContextHandlers = {
  async list_instructions(command: CommandOf<'list_instructions'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'list_instructions'>> {
    return ctx.agent.instructionFiles(command.conversation_id, session.source);
  },

  async list_prompts(command: CommandOf<'list_prompts'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'list_prompts'>> {
    return { prompts: await ctx.agent.savedPrompts(command.conversation_id, session.source) };
  },
};
