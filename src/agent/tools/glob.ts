/**
 * A glob as a regular expression over `/`-separated relative paths: `*` and `?` stay within one path
 * segment, `**` crosses them (`**\/` also matches nothing), `{a,b}` is either, `[abc]`/`[!abc]` a class.
 */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const slash = glob[i + 2] === '/';
        source += slash ? '(?:.*/)?' : '.*';
        i += slash ? 2 : 1;
      } else {
        source += '[^/]*';
      }
    } else if (c === '?') {
      source += '[^/]';
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) {
        source += '\\[';
      } else {
        let body = glob.slice(i + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        source += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '{') {
      braces++;
      source += '(?:';
    } else if (c === '}' && braces > 0) {
      braces--;
      source += ')';
    } else if (c === ',' && braces > 0) {
      source += '|';
    } else {
      source += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  source += ')'.repeat(braces);
  return new RegExp(`^${source}$`);
}

/** What a glob is matched against: the relative path (with `/` separators), or the file name alone for a glob without `/`. */
export function globTarget(glob: string, relativePath: string): string {
  return glob.includes('/') ? relativePath : relativePath.slice(relativePath.lastIndexOf('/') + 1);
}
