import { PREVIEW_CHARS } from './conversations';

/** A message's first non-empty line, cut at PREVIEW_CHARS characters (a conversation's last_message, a queued message's preview). */
export function previewOf(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return [...line.trim()].slice(0, PREVIEW_CHARS).join('');
}
