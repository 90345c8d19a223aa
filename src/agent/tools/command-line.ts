/**
 * An argv as one readable shell line (for permission rules and prompts), quoted only where needed.
 * Control characters are shown escaped (`$'a\nb'`), so a newline hidden in an argument is visible.
 */
export function formatArgv(argv: string[]): string {
  return argv.map(quoteArg).join(' ');
}

/** One argument quoted for a POSIX shell line, only if it needs it. */
export function quoteArg(arg: string): string {
  if (arg === '') return "''";
  if (/^[A-Za-z0-9_\-+=.,/:@%^]+$/.test(arg)) return arg;
  if (/[\x00-\x1f\x7f]/.test(arg)) {
    const escaped = arg.replace(/[\\'\x00-\x1f\x7f]/g, (c) => {
      if (c === '\\' || c === "'") return `\\${c}`;
      if (c === '\n') return '\\n';
      if (c === '\t') return '\\t';
      if (c === '\r') return '\\r';
      return `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
    });
    return `$'${escaped}'`;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}
