import { unitsCut } from '../protocol/code-points';
import type { Provider } from './providers/types';

/** Our instructions to the model that drafts a commit message from a worktree's diff (draft_commit_message). */
export const COMMIT_MESSAGE_INSTRUCTIONS = `You write git commit messages. From the diff you are given, write one commit message: a subject line of at most 72 characters in the imperative mood ("Add", "Fix", not "Added"), then, if the change needs it, a blank line and a short body saying what changed and why, wrapped at 72 characters. Answer with the message only: no code fences, no quotes, no preamble.`;

/** Characters of the diff the model is shown: enough to tell what a change does, never a whole huge diff. */
export const COMMIT_DIFF_CHARS = 24_000;

/** One provider call, no tools: the drafted message, or an error when the model answered nothing. */
export async function draftCommitMessage(provider: Provider, model: string, diff: string, maxTokens: number): Promise<string> {
  const { head, leftOut } = unitsCut(diff, COMMIT_DIFF_CHARS);
  const shown = leftOut === 0 ? diff : `${head}\n[… ${leftOut} more characters of the diff not shown]`;
  const result = await provider.complete({
    model,
    max_tokens: Math.min(maxTokens, 1_000),
    temperature: 0,
    messages: [
      { role: 'system', content: COMMIT_MESSAGE_INSTRUCTIONS },
      { role: 'user', content: `The diff:\n\n${shown}` },
    ],
  });
  const message = result.text
    .trim()
    .replace(/^```[a-z]*\n([\s\S]*?)\n```$/, '$1')
    .trim();
  if (!message) throw new Error('the model answered with an empty commit message');
  return message;
}
