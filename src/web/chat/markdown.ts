/**
 * Replies are markdown rendered with marked and sanitized with DOMPurify: raw HTML in a reply can
 * format text but never run (no scripts, no event handlers, no javascript: links). Images become
 * links, so a reply cannot make the phone or the editor fetch a remote resource by itself.
 */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { parseFragment } from '../pairing';
import { h } from './dom';

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    image({ href, text }) {
      return `<a href="${escapeAttr(href)}">${escapeText(text || href)}</a>`;
    },
  },
});

const PURIFY = {
  FORBID_TAGS: ['img', 'style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'video', 'audio', 'svg', 'math'],
  FORBID_ATTR: ['style', 'id'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

// Classes only for a code block's language: a reply must not borrow the UI's own look (a fake prompt).
// No link that carries a pairing (`#token=`, `#url=...&pair=`): opened, the phone page would take it as a
// scanned QR code, replacing this machine's credential or adding (and showing) the link's machine.
DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
  if (data.attrName === 'class' && !(node.nodeName === 'CODE' && /^language-[\w+-]+$/.test(data.attrValue))) data.keepAttr = false;
  if (data.attrName === 'href' && carriesPairing(data.attrValue)) data.keepAttr = false;
});

function carriesPairing(href: string): boolean {
  const hash = href.indexOf('#');
  return hash >= 0 && parseFragment(href.slice(hash), { protocol: 'http:', host: 'localhost' }) !== undefined;
}

/** Sanitized HTML of a markdown text. */
export function markdownToHtml(text: string): string {
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, PURIFY) as string;
}

/** Renders `text` into `target` (replacing its content), with Copy buttons on code blocks. */
export function renderMarkdown(target: HTMLElement, text: string): void {
  target.innerHTML = markdownToHtml(text);
  for (const pre of Array.from(target.querySelectorAll('pre'))) {
    const code = pre.querySelector('code') ?? pre;
    const language = /language-([\w+-]+)/.exec(code.className)?.[1];
    const button = h('button', { type: 'button', class: 'copy-button', 'aria-label': 'Copy code' }, 'Copy');
    button.addEventListener('click', () => void copyText(code.textContent ?? '', button));
    const bar = h('div', { class: 'code-bar' }, h('span', { class: 'code-lang' }, language ?? ''), button);
    const block = h('div', { class: 'code-block' });
    pre.replaceWith(block);
    block.append(bar, pre);
  }
  for (const link of Array.from(target.querySelectorAll('a[href]'))) {
    link.setAttribute('target', '_blank');
    link.setAttribute('rel', 'noopener noreferrer');
  }
}

async function copyText(text: string, button: HTMLButtonElement): Promise<void> {
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch {
    // Clipboard API unavailable (plain http on a phone): fall back to a hidden selection.
    const area = h('textarea', { class: 'offscreen', 'aria-hidden': 'true' });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
    area.remove();
  }
  button.textContent = copied ? 'Copied' : 'Copy failed';
  setTimeout(() => (button.textContent = 'Copy'), 1500);
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function escapeAttr(text: string): string {
  return escapeText(text).replace(/"/g, '&quot;');
}
