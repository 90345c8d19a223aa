import { firstUnits } from '../../protocol/code-points';

/** A tiny element builder: text children are always text nodes (never parsed as HTML). */
type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | null | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (name === 'class') element.className = String(value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, ...children);
  return element;
}

let idsGiven = 0;
/**
 * An id no other element of the page has: the phone shows one chat per paired machine, each with the same
 * controls, and a label's `for`, `aria-controls` or `aria-labelledby` must name the one of its own chat.
 */
export function uniqueId(prefix: string): string {
  idsGiven += 1;
  return `${prefix}-${idsGiven}`;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/**
 * An inline line-drawn icon on a `size`-unit grid, in the text's colour (emoji fonts are missing on some
 * systems, and the webview allows no remote images).
 */
export function strokeIcon(path: string, size: number, strokeWidth: number): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  svg.setAttribute('width', String(size));
  svg.setAttribute('height', String(size));
  svg.setAttribute('aria-hidden', 'true');
  const line = document.createElementNS(ns, 'path');
  line.setAttribute('d', path);
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', 'currentColor');
  line.setAttribute('stroke-width', String(strokeWidth));
  line.setAttribute('stroke-linecap', 'round');
  line.setAttribute('stroke-linejoin', 'round');
  svg.append(line);
  return svg;
}

/** A bin on a 16-unit grid (`strokeIcon(BIN, 16, 1.3)`): deleting a conversation, removing a computer. */
export const BIN = 'M6 2h4M2.5 4h11M4 4l.7 9.2a1 1 0 0 0 1 .8h4.6a1 1 0 0 0 1-.8L12 4M6.5 7v4M9.5 7v4';

/** A short, readable rendering of tool arguments (JSON, cut when long). */
export function formatArguments(args: unknown, max = 600): string {
  let text: string;
  try {
    text = typeof args === 'string' ? args : JSON.stringify(args, null, 1);
  } catch {
    text = String(args);
  }
  return text.length > max ? `${firstUnits(text, max)}…` : text;
}

/** "just now", "5 min ago", "yesterday", or a date. */
export function relativeTime(iso: string, now = Date.now()): string {
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return '';
  const seconds = Math.round((now - time) / 1000);
  if (seconds < 45) return 'just now';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  if (seconds < 172_800) return 'yesterday';
  return new Date(time).toLocaleDateString();
}
