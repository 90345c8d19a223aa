/**
 * "Undo this turn" on the assistant replies of turns that changed files (docs/protocol.md, "Undoing a
 * turn"): a button under the reply opens a panel with the preview (each file's status and the diff of
 * what will be restored, drawn like a prompt's diff), the calls undo cannot reverse, then Restore; the
 * answer says per file what was done. In the editor a file changed since the turn also offers VS Code's
 * three-way view (the host action `showUndoThreeWay`).
 */
import type { CommandInput, EnvelopeOf, TurnChanges, UndoFile, UndoTurnResult } from '../../protocol';
import { h } from './dom';
import { renderPreview } from './preview-view';
import { unrecordedWords, wordsParts } from '../../protocol/tool-words';
import { wordNodes } from './word-nodes';

type Call = <C extends CommandInput>(frame: C) => Promise<EnvelopeOf<C['type']> | undefined>;

export interface UndoViewOptions {
  call: Call;
  /** The list of messages on screen, where replies carry `data-message-id`. */
  list: HTMLElement;
  /** The editor opens a changed file's three-way view (argument: JSON of conversation_id, message_id, path); absent on the phone. */
  showThreeWay?: (argument: string) => void;
}

const STATUS_TEXT: Record<UndoFile['status'], string> = {
  will_restore: 'will be restored',
  changed_since: 'changed since the turn: left as it is',
  already_before: 'already as before the turn',
  undone: 'already undone',
};

const OUTCOME_TEXT: Record<NonNullable<UndoFile['outcome']>, string> = {
  restored: 'restored',
  deleted: 'deleted',
  skipped: 'left as it is',
  failed: 'failed',
};

export class UndoView {
  constructor(private readonly options: UndoViewOptions) {}

  /** Puts the button under each reply on screen whose turn changed files and is not undone yet; marks those undone. */
  async refresh(conversationId: string): Promise<void> {
    const answer = await this.options.call({ type: 'list_turn_changes', conversation_id: conversationId });
    if (answer?.status !== 'ok') return;
    for (const turn of answer.data.turns) this.offer(conversationId, turn);
  }

  /** Another client undid the turn of this reply (`turn.undone`): marked as a reload would show it. */
  undone(messageId: string): void {
    const reply = this.replyOf(messageId);
    if (reply) markUndone(reply);
  }

  private replyOf(messageId: string): HTMLElement | null {
    return this.options.list.querySelector<HTMLElement>(`.message.assistant[data-message-id="${CSS.escape(messageId)}"]`);
  }

  private offer(conversationId: string, turn: TurnChanges): void {
    if (!turn.message_id || turn.files === 0) return;
    const reply = this.replyOf(turn.message_id);
    if (!reply) return;
    if (turn.undone) return markUndone(reply);
    if (reply.querySelector(':scope > .undo-turn')) return;
    const messageId = turn.message_id;
    const button = h('button', { type: 'button', class: 'button secondary undo-turn', title: `Restore the ${turn.files} file${turn.files === 1 ? '' : 's'} this turn changed` }, 'Undo this turn');
    button.addEventListener('click', () => void this.open(reply, conversationId, messageId));
    reply.append(button);
  }

  private async open(reply: HTMLElement, conversationId: string, messageId: string): Promise<void> {
    reply.querySelector(':scope > .undo-panel')?.remove();
    const panel = h('div', { class: 'undo-panel', role: 'group', 'aria-label': 'Undo this turn' }, h('div', { class: 'undo-loading' }, 'Working out what undo would restore…'));
    reply.append(panel);
    const answer = await this.options.call({ type: 'undo_turn', conversation_id: conversationId, message_id: messageId });
    if (answer?.status !== 'ok') {
      panel.replaceChildren(h('div', { class: 'note error', role: 'alert' }, `Cannot undo: ${answer?.error ?? 'not connected'}`));
      return;
    }
    this.draw(panel, reply, answer.data);
  }

  private draw(panel: HTMLElement, reply: HTMLElement, result: UndoTurnResult): void {
    const restorable = result.files.filter((f) => f.status === 'will_restore').length;
    const files = h('ul', { class: 'undo-files' }, ...result.files.map((file) => this.fileItem(file, result)));
    const notReversible = result.not_reversible.length
      ? h(
          'div',
          { class: 'undo-not-reversible', role: 'note' },
          h('div', { class: 'undo-section' }, 'Not reversible (their effects stay):'),
          h('ul', {}, ...result.not_reversible.map((call) => h('li', {}, ...wordNodes(wordsParts(unrecordedWords(call.tool, call.detail)))))),
        )
      : null;
    const heading = result.applied ? 'Undo done' : restorable > 0 ? `Undo restores ${restorable} file${restorable === 1 ? '' : 's'}` : 'Nothing to restore';
    const actions = h('div', { class: 'undo-actions' });
    if (!result.applied) {
      if (restorable > 0) {
        const confirm = h('button', { type: 'button', class: 'button primary undo-confirm' }, `Restore ${restorable} file${restorable === 1 ? '' : 's'}`);
        confirm.addEventListener('click', () => void this.confirm(panel, reply, result, confirm));
        actions.append(confirm);
      }
      const cancel = h('button', { type: 'button', class: 'button secondary undo-cancel' }, 'Close');
      cancel.addEventListener('click', () => panel.remove());
      actions.append(cancel);
    }
    panel.replaceChildren(h('div', { class: 'undo-heading' }, heading), files, ...(notReversible ? [notReversible] : []), actions);
    // The reader asked for it: the preview, then the undo's result, come into view.
    panel.scrollIntoView({ block: 'nearest' });
  }

  private fileItem(file: UndoFile, result: UndoTurnResult): HTMLElement {
    const status = file.status === 'will_restore' && file.action === 'delete' ? 'created by the turn: will be deleted' : STATUS_TEXT[file.status];
    const item = h(
      'li',
      { class: 'undo-file', 'data-status': file.status, 'data-outcome': file.outcome },
      h('div', { class: 'undo-file-head' }, h('span', { class: 'diff-path' }, file.path), ' ', h('span', { class: 'undo-status' }, file.outcome ? OUTCOME_TEXT[file.outcome] : status)),
    );
    if (file.error) item.append(h('div', { class: 'undo-error' }, file.error));
    if (file.diff && !result.applied) {
      item.append(renderPreview({ kind: 'diff', path: file.path, diff: file.diff, new_file: false, truncated: file.truncated }, {}));
    }
    const threeWay = this.options.showThreeWay;
    if (threeWay && file.status === 'changed_since' && !result.applied) {
      const argument = JSON.stringify({ conversation_id: result.conversation_id, message_id: result.turn_id, path: file.path });
      item.append(h('button', { type: 'button', class: 'button secondary undo-three-way', onclick: () => threeWay(argument) }, 'Compare before / turn / now'));
    }
    return item;
  }

  private async confirm(panel: HTMLElement, reply: HTMLElement, preview: UndoTurnResult, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    const answer = await this.options.call({ type: 'undo_turn', conversation_id: preview.conversation_id, message_id: preview.turn_id, confirm: true });
    if (answer?.status !== 'ok') {
      button.disabled = false;
      panel.append(h('div', { class: 'note error', role: 'alert' }, `Undo failed: ${answer?.error ?? 'not connected'}`));
      return;
    }
    this.draw(panel, reply, answer.data);
    if (answer.data.files.every((f) => f.outcome !== 'failed')) {
      reply.querySelector(':scope > .undo-turn')?.remove();
      markUndone(reply);
    }
  }
}

/**
 * An undone turn reads as undone, after a reload too: its reply says so, and its cards that changed a
 * file (those showing an applied diff) no longer read as a plain "ok". A command's effects stay.
 */
function markUndone(reply: HTMLElement): void {
  if (reply.classList.contains('undone')) return;
  reply.classList.add('undone');
  reply.querySelector(':scope > .undo-turn')?.remove();
  reply.append(h('div', { class: 'message-note undone-note', role: 'note' }, 'Undone: the files this turn changed were put back as they were.'));
  for (let node = reply.previousElementSibling; node && !node.matches('.message.user'); node = node.previousElementSibling) {
    if (!(node instanceof HTMLElement) || !node.matches('.tool-card[data-status="ok"]') || !node.querySelector('.tool-result .diff') || node.dataset.undone) continue;
    node.dataset.undone = 'true';
    node.querySelector('.tool-status')?.append(' · undone');
  }
}
