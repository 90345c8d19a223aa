import { unitsCut } from '../../protocol/code-points';
import type { MessageRow } from '../../store';
import type { CompletionResult, Provider } from '../providers/types';
import type { ToolCallData, ToolResultData } from '../transcript';
import { contextOf, withContext } from '../chat-context';

/**
 * Our instructions to the model that writes a conversation's summary. What users of other agents miss
 * after a compaction is the point of the task and the rules they gave, so those are asked for first
 * and in the user's own words.
 */
export const SUMMARY_INSTRUCTIONS = `You keep the memory of a long conversation between a person and a coding agent working in their workspace. The conversation no longer fits the model's context window: from now on the agent sees only your summary and the latest turns, so whatever you leave out is forgotten.

Write the summary in Markdown, with these sections:
## Goal
The task the person set, in their own words where short.
## Constraints and decisions
Every rule, constraint, preference and decision the person stated (quote them exactly; never drop one, even an old one), and decisions the agent made that the person agreed to.
## Files touched
Each path read, created or changed, and what was done to it.
## Progress
What is done, what was tried and failed, and where the work stands.
## Open questions
What is unresolved or waits for the person.

Keep exact names, paths, commands, numbers and error messages. Leave out pleasantries and tool outputs that no longer matter. Answer with the summary only.`;

/** Characters of one tool output or call shown to the summariser: enough to know what it was. */
const TOOL_TEXT_CAP = 1_000;

function capped(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const { head, leftOut } = unitsCut(text, cap);
  return `${head} [… ${leftOut} more characters]`;
}

/** One stored row as a line of the transcript the summariser reads. */
function rowText(row: MessageRow): string {
  if (row.role === 'user') return `### Person\n${withContext(row.content, contextOf(row.data))}`;
  if (row.role === 'assistant') return `### Agent\n${row.content}`;
  const data = row.data as ToolCallData | ToolResultData | null;
  if (data?.kind === 'call') return `${data.text ? `### Agent\n${data.text}\n` : ''}### Tool call ${row.tool_name ?? 'tool'}\n${capped(row.content, TOOL_TEXT_CAP)}`;
  if (data?.kind === 'result') return `### Tool result ${row.tool_name ?? 'tool'}${data.ok ? '' : data.denied ? ' (denied)' : ' (failed)'}\n${capped(row.content, TOOL_TEXT_CAP)}`;
  return '';
}

/** The rows as the text the summariser reads, in pieces of at most `chunkChars` (a row is never split). */
export function transcriptChunks(rows: readonly MessageRow[], chunkChars: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const row of rows) {
    const text = capped(rowText(row), chunkChars);
    if (!text) continue;
    if (current && current.length + text.length + 2 > chunkChars) {
      chunks.push(current);
      current = '';
    }
    current = current ? `${current}\n\n${text}` : text;
  }
  if (current) chunks.push(current);
  return chunks;
}

export interface SummariseInput {
  provider: Provider;
  model: string;
  /** The summary the rows follow, if any: the new one replaces it, so it must keep what it says. */
  previous?: string;
  rows: readonly MessageRow[];
  /** What the person asked to keep in particular (compact_conversation's `focus`). */
  focus?: string;
  /** Characters the transcript may take in one request (the window, less the summary and the reply). */
  chunkChars: number;
  maxTokens: number;
  signal?: AbortSignal;
  /** Each provider call's result, for the turn's usage. */
  onResult?: (result: CompletionResult) => void;
}

/**
 * Asks the model for the summary of `rows` after `previous`: one request per piece of the transcript
 * that fits the window, each folding its piece into the summary so far. Throws what the provider
 * throws; an empty answer is a failure too (a summary that says nothing would lose everything).
 */
export async function summarise(input: SummariseInput): Promise<string> {
  let summary = input.previous;
  for (const chunk of transcriptChunks(input.rows, input.chunkChars)) {
    const focus = input.focus ? `\n\nThe person asks you to keep in particular: ${input.focus}` : '';
    const result = await input.provider.complete({
      model: input.model,
      max_tokens: input.maxTokens,
      temperature: 0,
      messages: [
        { role: 'system', content: SUMMARY_INSTRUCTIONS },
        { role: 'user', content: `${summary ? `The summary so far (keep everything it says that still holds):\n\n${summary}\n\n` : ''}The turns to fold into the summary:\n\n${chunk}${focus}` },
      ],
      signal: input.signal,
    });
    input.onResult?.(result);
    if (!result.text.trim()) throw new Error('the model returned an empty summary');
    summary = result.text.trim();
  }
  if (summary === undefined) throw new Error('there was nothing to summarise');
  return summary;
}
