import type * as z from 'zod';
import type { CommandType } from './commands';
import type { ErrorEnvelope, RequestId } from './envelope';
import { AgentContextResults } from './agent-context';
import { AttachmentResults } from './attachments';
import { AuditResults } from './audit';
import { AuthResults } from './auth';
import { BackupResults } from './backup';
import { ChatResult, ChatResults } from './chat';
import { ConfigResults } from './config';
import { ConversationResults } from './conversations';
import { DeviceResults } from './devices';
import { PermissionResults } from './permissions';
import { PlanResults } from './plan';
import { PushResults } from './push';
import { RelayResults } from './relay';
import { UndoResults } from './undo';
import { UsageResults } from './usage';
import { WebhookResults } from './webhook';
import { WorktreeResults } from './worktrees';
import { lazySchema } from './lazy-schema';

/**
 * What each command answers: the `data` of its ok envelope (docs/protocol.md, "Commands"). One schema
 * per command, keyed by its type, declared beside the command in its domain's file, so the handlers'
 * return types, the clients' reads and this table cannot drift apart (the HandlerMap type and
 * test/service/protocol-results.test.ts hold them together).
 */
export const CommandResults = lazySchema(
  () =>
    ({
      ...AuthResults,
      ...ChatResults,
      ...ConversationResults,
      ...PermissionResults,
      ...ConfigResults,
      ...AgentContextResults,
      ...WebhookResults,
      ...RelayResults,
      ...DeviceResults,
      ...PushResults,
      ...UsageResults,
      ...PlanResults,
      ...UndoResults,
      ...BackupResults,
      ...AttachmentResults,
      ...AuditResults,
      ...WorktreeResults,
      /** A comment on a change is a chat message of the conversation: the same answer. */
      comment_on_change: ChatResult,
    }) satisfies { [T in CommandType]: z.ZodType },
);

export type CommandResults = typeof CommandResults;
/** The `data` a command of type `T` answers with. */
export type ResultOf<T extends CommandType> = z.infer<CommandResults[T]>;

/** The ok envelope answering a command of type `T`. */
export interface OkEnvelopeOf<T extends CommandType> {
  status: 'ok';
  data: ResultOf<T>;
  id?: RequestId;
}
/** Any envelope answering a command of type `T`: its result or an error. */
export type EnvelopeOf<T extends CommandType> = OkEnvelopeOf<T> | ErrorEnvelope;
