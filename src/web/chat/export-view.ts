/**
 * "Export" in the top bar: the conversation on screen as Markdown or JSON (export_conversation). On a
 * phone it is shared (navigator.share with a File: mail, notes, files...) where the browser can, else
 * downloaded; in the editor the extension saves it through a save dialog (the `exportConversation` action).
 */
import type { ExportFormat, HostAction } from '../../protocol';
import { readExport } from '../../protocol/export-reader';
import type { ServiceConnection } from '../connection';
import { h } from './dom';

export interface ExportViewOptions {
  connection: ServiceConnection;
  /** The conversation on screen (none: nothing to export). */
  current(): string | undefined;
  /** Tells the user how it went (a note in the conversation). */
  report(text: string, kind: 'info' | 'error'): void;
}

export class ExportView {
  readonly element: HTMLElement;
  private readonly button: HTMLButtonElement;
  private readonly menu: HTMLElement;

  constructor(private readonly options: ExportViewOptions) {
    // Named by its own visible word (walk24: a bare glyph said nothing to a person); the tooltip says what it does.
    this.button = h(
      'button',
      { type: 'button', class: 'icon-button export-toggle', title: 'Export or share this conversation', 'aria-expanded': 'false', 'aria-haspopup': 'true' },
      h('span', { class: 'export-glyph', 'aria-hidden': 'true' }, '⤓'),
      h('span', { class: 'export-label' }, 'Export'),
    );
    this.menu = h(
      'div',
      { class: 'export-menu', role: 'group', 'aria-label': 'Export as', hidden: true },
      h('button', { type: 'button', class: 'button secondary export-markdown', onclick: () => void this.export('markdown') }, 'Markdown'),
      h('button', { type: 'button', class: 'button secondary export-json', onclick: () => void this.export('json') }, 'JSON'),
    );
    this.button.addEventListener('click', () => this.toggle());
    this.element = h('span', { class: 'export' }, this.button, this.menu);
    this.setConversation(undefined);
  }

  /** Only a stored conversation can be exported. */
  setConversation(conversationId: string | undefined): void {
    this.button.hidden = conversationId === undefined;
    if (conversationId === undefined) this.toggle(false);
  }

  private toggle(open = this.menu.hidden): void {
    this.menu.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    if (open) this.menu.querySelector<HTMLElement>('button')?.focus();
  }

  private async export(format: ExportFormat): Promise<void> {
    this.toggle(false);
    const conversationId = this.options.current();
    if (!conversationId) return;
    const action = this.options.connection.action?.bind(this.options.connection) as ((name: HostAction, argument?: string) => void) | undefined;
    if (action) return action('exportConversation', `${format}:${conversationId}`);
    try {
      const file = await readExport((frame) => this.options.connection.request(frame), conversationId, format);
      await deliver(new File([file.text], file.file_name, { type: `${file.mime_type};charset=utf-8` }));
    } catch (error) {
      if ((error as { name?: string }).name === 'AbortError') return; // the share sheet was closed
      this.options.report(`Could not export: ${error instanceof Error ? error.message : String(error)}`, 'error');
    }
  }
}

/** Shares the file where the browser can share files, else downloads it. */
async function deliver(file: File): Promise<void> {
  if (typeof navigator.canShare === 'function' && navigator.canShare({ files: [file] })) {
    await navigator.share({ files: [file], title: file.name });
    return;
  }
  const url = URL.createObjectURL(file);
  const link = h('a', { href: url, download: file.name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own copy once it started.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
