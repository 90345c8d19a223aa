/** Longest slug of a conversation's title in its branch's name. */
export const MAX_SLUG_CHARS = 30;

/** A title as a branch name's part: lower-case ASCII letters and digits joined by `-`, at most MAX_SLUG_CHARS. */
export function slugOf(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, MAX_SLUG_CHARS)
    .replace(/-+$/, '');
  return slug || 'run';
}

/** `assistant/<slug>-<short id>`, and `-2`, `-3`... after it when `attempt` > 1 (the name was taken). */
export function branchNameOf(title: string, conversationId: string, attempt = 1): string {
  return `assistant/${folderNameOf(title, conversationId, attempt)}`;
}

/** The worktree's folder name: the branch's name without `assistant/`. */
export function folderNameOf(title: string, conversationId: string, attempt = 1): string {
  const shortId =
    conversationId
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(0, 8)
      .toLowerCase() || 'x';
  return `${slugOf(title)}-${shortId}${attempt > 1 ? `-${attempt}` : ''}`;
}
