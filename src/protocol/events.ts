import { z } from 'zod';
import { Conversation, Message, PermissionDecision } from './commands';
import { RequestId } from './envelope';
import { AttachmentInfo } from './attachments';
import { AuditAppendedEvent } from './audit';
import { Plan } from './plan';

/**
 * A conversation's events carry `seq` for the clients following it (follow_conversation): increasing by
 * one per event of that conversation, so a client that reconnects asks for what came after the last it saw.
 */
const Seq = z.number().int().optional();

/** Events are pushed unsolicited to authenticated sockets; they carry `event`, never `status`. */
export const ChatDeltaEvent = z.object({
  event: z.literal('chat.delta'),
  seq: Seq,
  id: RequestId.optional(),
  conversation_id: z.string(),
  delta: z.string(),
});
export const ToolCallEvent = z.object({
  event: z.literal('tool.call'),
  seq: Seq,
  id: RequestId.optional(),
  conversation_id: z.string(),
  tool: z.string(),
  /** The call's id (the stored tool messages carry it too, so a client can tell a call it already shows). */
  call_id: z.string().optional(),
  arguments: z.record(z.string(), z.unknown()),
});
export const ToolResultEvent = z.object({
  event: z.literal('tool.result'),
  seq: Seq,
  id: RequestId.optional(),
  conversation_id: z.string(),
  tool: z.string(),
  /** The id of the call this result answers. */
  call_id: z.string().optional(),
  ok: z.boolean(),
  /** The tool did not run: the permission gate refused it (a rule, the mode, the user or the source). */
  denied: z.boolean(),
  /** An image the tool read or made, shown to the user (read it with get_attachment). */
  attachments: z.array(AttachmentInfo).optional(),
});
/**
 * What a tool call would do, worked out by the tool itself without doing it (docs/protocol.md,
 * "Previews"): a file tool's exact diff, a command's line with its risky parts named, or the arguments.
 * `error`: the call would fail, and this is the error the tool would give.
 */
export const PermissionPreview = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('diff'),
    path: z.string(),
    /** Unified diff against the file as it is now; cut after 200,000 characters (then `truncated`). */
    diff: z.string(),
    new_file: z.boolean(),
    truncated: z.boolean(),
  }),
  z.object({
    kind: z.literal('command'),
    command: z.string(),
    /** Relative to the workspace folder (`.` for the folder itself). */
    cwd: z.string(),
    timeout_seconds: z.number(),
    /** Destructive or far-reaching parts of the line, one sentence each; empty when none was seen. */
    warnings: z.array(z.string()),
  }),
  z.object({ kind: z.literal('arguments'), text: z.string() }),
  z.object({ kind: z.literal('error'), message: z.string() }),
]);
export type PermissionPreview = z.infer<typeof PermissionPreview>;

/** A permission request waiting for a person: the `permission.request` event, and each element of list_pending_permissions. */
export const PermissionRequest = z.object({
  request_id: z.string(),
  conversation_id: z.string(),
  conversation_title: z.string(),
  /** Where the chat asking came from: `editor`, `ws`, `relay` or `webhook:<account>`. */
  source: z.string(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  preview: PermissionPreview.optional(),
  /** The conversation works in its own git worktree: the tool acts there (its paths and cwd are relative to `path`), not in the workspace. */
  worktree: z.object({ branch: z.string(), path: z.string() }).optional(),
  created_at: z.string(),
  /** When it is denied if nobody answers (permission_timeout_seconds after created_at). */
  expires_at: z.string(),
});
export type PermissionRequest = z.infer<typeof PermissionRequest>;
export const PermissionRequestEvent = PermissionRequest.extend({ event: z.literal('permission.request'), seq: Seq });
/** A message of the conversation was stored (the user's, starting a turn, or the reply): to its followers. */
export const ChatMessageEvent = z.object({
  event: z.literal('chat.message'),
  seq: Seq,
  /** The sender's request id, on the sender's own copy (as on the turn's other events). */
  id: RequestId.optional(),
  conversation_id: z.string(),
  /** A user message sent with a client_message_id carries it (`message.client_message_id`). */
  message: Message,
});

/** How a request ended: a person answered, nobody did in time, its chat was cancelled, the service restarted. */
export const PermissionResolution = z.enum(['answered', 'expired', 'cancelled', 'restarted']);
export type PermissionResolution = z.infer<typeof PermissionResolution>;

export const PermissionResolvedEvent = z.object({
  event: z.literal('permission.resolved'),
  seq: Seq,
  request_id: z.string(),
  conversation_id: z.string(),
  /** The decision in force (`deny` unless a person allowed it). */
  decision: PermissionDecision,
  /** Who answered, as people read it (`editor`, `LAN`, `phone (relay)`); only when `reason` is `answered`. */
  decided_by: z.string().optional(),
  reason: PermissionResolution,
  /** The allow rule an `allow_always` added. */
  rule_added: z.string().optional(),
});
export const ConfigChangedEvent = z.object({
  event: z.literal('config.changed'),
  fields: z.array(z.string()),
});
export const ConversationUpdatedEvent = z.object({
  event: z.literal('conversation.updated'),
  conversation_id: z.string(),
  source: z.string(),
  /** The conversation's row as list_conversations gives it, so no client has to list again. */
  conversation: Conversation,
});
/**
 * A turn of a conversation ended, whoever started it (a chat of any client, a webhook message):
 * `error` is a short readable reason for a failure (the kind of failure and an HTTP status: no secret,
 * no provider text, no stack).
 */
export const TurnEndedEvent = z.object({
  event: z.literal('turn.ended'),
  seq: Seq,
  conversation_id: z.string(),
  /** Where the turn came from: `editor`, `ws`, `relay` or `webhook:<account>`. */
  source: z.string(),
  outcome: z.enum(['answered', 'failed', 'cancelled']),
  error: z.string().optional(),
});
export type TurnEndedEvent = z.infer<typeof TurnEndedEvent>;

/** The model wrote its plan with the `todo` tool: the whole checklist, to every follower of the conversation. */
export const PlanUpdatedEvent = z.object({
  event: z.literal('plan.updated'),
  seq: Seq,
  id: RequestId.optional(),
  conversation_id: z.string(),
  plan: Plan,
});
export type PlanUpdatedEvent = z.infer<typeof PlanUpdatedEvent>;

export const ServiceEvent = z.discriminatedUnion('event', [
  ChatDeltaEvent,
  ToolCallEvent,
  ToolResultEvent,
  PermissionRequestEvent,
  PermissionResolvedEvent,
  ConfigChangedEvent,
  ConversationUpdatedEvent,
  TurnEndedEvent,
  PlanUpdatedEvent,
  ChatMessageEvent,
  AuditAppendedEvent,
]);
export type ServiceEvent = z.infer<typeof ServiceEvent>;
