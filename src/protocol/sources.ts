/**
 * A source (`editor`, `ws`, `relay`, `webhook:<account>`: where a conversation or a permission request
 * came from) as people read it. No imports: the web page bundles it too.
 */
export function sourceLabel(source: string): string {
  if (source === 'editor') return 'editor';
  if (source === 'ws') return 'LAN';
  if (source === 'relay') return 'phone (relay)';
  if (source.startsWith('webhook:')) return `webhook “${source.slice('webhook:'.length)}”`;
  return source;
}
