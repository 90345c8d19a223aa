import * as z from 'zod';
import { command, nonEmpty } from './command-frame';
import { Seq } from './envelope';
import { DiffPreview } from './tool-results';
import { lazySchema } from './lazy-schema';

/**
 * Permission prompts (docs/protocol.md, "Permissions"): the mode, a request waiting for a person with
 * the tool's preview, the answer, and the events that announce and resolve a request.
 */

export const PermissionMode = lazySchema(() => z.enum(['ask', 'allow', 'deny']));
export type PermissionMode = z.infer<typeof PermissionMode>;

/**
 * An answer to a permission request, and the decision in force in every result and event:
 * `allow_conversation` also allows the tool for the rest of the conversation; `allow_always` (owner
 * only) also adds the narrowest allow rule for the call (docs/protocol.md, "Permission rules").
 */
export const PermissionDecision = lazySchema(() => z.enum(['allow', 'allow_conversation', 'allow_always', 'deny']));
export type PermissionDecision = z.infer<typeof PermissionDecision>;

/**
 * A decision as a client sends it: `allow_session`, the name `allow_conversation` had until protocol 2,
 * is still read (as `allow_conversation`) for a release; results and events say the new name.
 */
export const PermissionDecisionInput = lazySchema(() =>
  z
    // The error names the current decisions only: the old name is read, not offered.
    .enum([...PermissionDecision.options, 'allow_session'], { error: `decision must be one of ${PermissionDecision.options.join(', ')}` })
    .transform((decision): PermissionDecision => (decision === 'allow_session' ? 'allow_conversation' : decision)),
);

/** Longest `note` a deny may carry (it becomes the tool result the model reads). */
export const MAX_PERMISSION_NOTE_CHARS = 2000;

export const PermissionResponseCommand = lazySchema(() =>
  command('permission_response', {
    request_id: nonEmpty('request_id'),
    decision: PermissionDecisionInput,
    /** With `deny`: why, for the model (it receives it as the tool result and can change course). */
    note: z
      .string({ error: 'note must be a string' })
      .max(MAX_PERMISSION_NOTE_CHARS, { error: `note must be at most ${MAX_PERMISSION_NOTE_CHARS} characters` })
      .optional(),
  }),
);

/** The permission requests waiting now that this client may answer. */
export const ListPendingPermissionsCommand = lazySchema(() => command('list_pending_permissions', {}));

/**
 * What a tool call would do, worked out by the tool itself without doing it (docs/protocol.md,
 * "Previews"): a file tool's exact diff, a command's line with its risky parts named, or the arguments.
 * `error`: the call would fail, and this is the error the tool would give.
 */
export const PermissionPreview = lazySchema(() =>
  z.discriminatedUnion('kind', [
    DiffPreview,
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
  ]),
);
export type PermissionPreview = z.infer<typeof PermissionPreview>;

/** A permission request waiting for a person: the `permission.request` event, and each element of list_pending_permissions. */
export const PermissionRequest = lazySchema(() =>
  z.object({
    request_id: z.string(),
    conversation_id: z.string(),
    conversation_title: z.string(),
    /** Where the chat asking came from: `editor`, `ws`, `relay` or `webhook:<account>`. */
    source: z.string(),
    /** Who sent the message whose turn asks, as people read it (Message.from: a paired device's name, a password user's, `editor`); absent for a webhook's turn or from older services. */
    from: z.string().optional(),
    tool: z.string(),
    arguments: z.record(z.string(), z.unknown()),
    /** The tool call it asks about: its `tool.call` event's `call_id` (absent from older services). */
    call_id: z.string().optional(),
    preview: PermissionPreview.optional(),
    /** The allow rule `allow_always` would add (absent when it adds none: a call with nothing a rule can name). */
    always_rule: z.string().optional(),
    /** The conversation works in its own git worktree: the tool acts there (its paths and cwd are relative to `path`), not in the workspace. */
    worktree: z.object({ branch: z.string(), path: z.string() }).optional(),
    created_at: z.string(),
    /** When it is denied if nobody answers (permission_timeout_seconds after created_at). */
    expires_at: z.string(),
  }),
);
export type PermissionRequest = z.infer<typeof PermissionRequest>;

/** How a request ended: a person answered, nobody did in time, its chat was cancelled, the service restarted. */
export const PermissionResolution = lazySchema(() => z.enum(['answered', 'expired', 'cancelled', 'restarted']));
export type PermissionResolution = z.infer<typeof PermissionResolution>;

export const PermissionResults = lazySchema(() => ({
  permission_response: z.object({
    request_id: z.string(),
    /** The decision in force: this answer's, or (already_decided) the same one given before. */
    decision: PermissionDecision,
    /** Who decided, as people read it (commands/audit-actor.ts `sessionLabel`). */
    decided_by: z.string(),
    /** This answer came after the same decision was made: nothing changed. */
    already_decided: z.boolean(),
    rule_added: z.string().optional(),
  }),
  list_pending_permissions: z.object({ requests: z.array(PermissionRequest) }),
}));

// ---- Events ----
export const PermissionRequestEvent = lazySchema(() => PermissionRequest.extend({ event: z.literal('permission.request'), seq: Seq }));

export const PermissionResolvedEvent = lazySchema(() =>
  z.object({
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
  }),
);
