/** Mark the matches in search snippets; private-use characters, so they do not occur in ordinary text. */
export const MARK_OPEN = '\uE000';
export const MARK_CLOSE = '\uE001';
