/**
 * What a tool call did, for the person reading the conversation (docs/protocol.md, "Tool results"): kept
 * with the stored result beside the text the model reads, so a card can show the applied diff or a
 * command's exit code without parsing that text. Browser-safe (the phone imports the types).
 */
import * as z from 'zod';
import { lazySchema } from './lazy-schema';

/** A file tool's change as a unified diff: a prompt's preview of it, and the result's record of what was applied. */
export const DiffPreview = lazySchema(() =>
  z.object({
    kind: z.literal('diff'),
    path: z.string(),
    /** Unified diff against the file as it was; cut after 200,000 characters (then `truncated`). */
    diff: z.string(),
    new_file: z.boolean(),
    truncated: z.boolean(),
  }),
);
export type DiffPreview = z.infer<typeof DiffPreview>;

/** How a run_command call ended. */
export const CommandOutcome = lazySchema(() =>
  z.object({
    kind: z.literal('command'),
    /** null when it did not exit by itself (timed out, cancelled, killed by a signal). */
    exit_code: z.number().int().nullable(),
    /** The signal that killed it, when one did. */
    signal: z.string().optional(),
    /** Stopped at its time limit. */
    timed_out: z.boolean(),
  }),
);
export type CommandOutcome = z.infer<typeof CommandOutcome>;

/** A tool result's `detail`: the applied diff (write_file, edit_file) or how a command ended (run_command). */
export const ToolResultDetail = lazySchema(() => z.discriminatedUnion('kind', [DiffPreview, CommandOutcome]));
export type ToolResultDetail = z.infer<typeof ToolResultDetail>;
