/**
 * One .gitignore line as an exclude glob; undefined for a blank line, a comment, a negation or braces.
 * A trailing run of slashes is matched from its start only (a lookbehind): `\/+$` tried from every slash
 * of a long run inside the line, quadratically (a repository's own file).
 */
export function gitignoreGlob(raw: string): string | undefined {
  const line = raw.trim();
  if (!line || line.startsWith('#') || line.startsWith('!') || /[{}]/.test(line)) return undefined;
  const pattern = line.replace(/(?<!\/)\/+$/, '');
  if (!pattern) return undefined;
  return pattern.includes('/') ? pattern.replace(/^\/+/, '') : `**/${pattern}`;
}
