/**
 * The Changes view of a conversation that works in its own git worktree (docs/protocol.md, "Review and
 * land"): a full-screen sheet with the branch, each changed file (status, +/-) and its hunks drawn with the
 * prompt card's diff lines; per hunk Revert and Comment (a comment on a line becomes the conversation's next
 * message, and the chat comes back on screen), per file Revert; then Commit (typed or drafted by the model),
 * Land (merge, squash or rebase: a refusal names the files and why), Push (the compare link) and Discard.
 */
import type { CommandInput, EnvelopeOf } from '../../protocol';
import { exactName } from '../../protocol/display-name';
import type { Changes, ChangedFile, ChangeHunk, LandMethod, WorktreeInfo } from '../../protocol/worktrees';
import { parseUnifiedDiff } from './diff-hunks';
import { diffStats } from './diff-stats';
import { h, uniqueId } from './dom';
import { diffLineElement } from './preview-view';

type Call = <C extends CommandInput>(frame: C) => Promise<EnvelopeOf<C['type']> | undefined>;

export interface ChangesViewOptions {
  call: Call;
  /** A comment was sent as the conversation's next message: the chat shows it (the answer comes when its turn ends). */
  commented(conversationId: string, answer: Promise<EnvelopeOf<'comment_on_change'> | undefined>): void;
  /** The worktree's counts changed (a revert, a commit, a land, a discard): the badge follows. */
  changed(conversationId: string, worktree: WorktreeInfo | null): void;
  /** In the editor: its diff editor and a new window on the worktree (host actions `reviewChanges`, `openWorktree`); absent on the phone. */
  editor?: { review(conversationId: string): void; openWorktree(conversationId: string): void };
}

const STATUS_TEXT: Record<ChangedFile['status'], string> = { added: 'added', modified: 'modified', deleted: 'deleted', renamed: 'renamed' };
const METHOD_TEXT: Record<LandMethod, string> = { merge: 'Merge', squash: 'Squash', rebase: 'Rebase' };

/** "3 changed": the header's and the conversation list's badge. */
export function changedText(worktree: Pick<WorktreeInfo, 'changed_files'>): string {
  return `${worktree.changed_files} changed`;
}

export class ChangesView {
  readonly panel: HTMLElement;
  private readonly body: HTMLElement;
  private readonly status: HTMLElement;
  private conversationId: string | undefined;
  /** Where the focus goes back to when the sheet closes. */
  private opener: HTMLElement | null = null;

  constructor(private readonly options: ChangesViewOptions) {
    const titleId = uniqueId('ra-changes-title');
    const close = h('button', { type: 'button', class: 'icon-button changes-close', 'aria-label': 'Close the changes' }, '✕');
    close.addEventListener('click', () => this.close());
    this.status = h('div', { class: 'changes-status', role: 'status' });
    this.body = h('div', { class: 'changes-body' });
    // The activity sheet's frame (media/chat.css): fixed over the chat, its own scroller.
    this.panel = h(
      'section',
      { class: 'changes-panel', hidden: true, role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': titleId },
      h('div', { class: 'changes-head' }, h('h2', { id: titleId }, 'Changes'), close),
      this.status,
      this.body,
    );
    this.panel.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.close();
    });
  }

  get openFor(): string | undefined {
    return this.panel.hidden ? undefined : this.conversationId;
  }

  async open(conversationId: string): Promise<void> {
    this.opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    this.conversationId = conversationId;
    this.panel.hidden = false;
    this.say('');
    this.body.replaceChildren(h('div', { class: 'changes-loading' }, 'Reading the changes…'));
    this.panel.querySelector<HTMLElement>('.changes-close')?.focus();
    const answer = await this.options.call({ type: 'get_changes', conversation_id: conversationId });
    if (conversationId !== this.conversationId) return;
    if (answer?.status !== 'ok') {
      this.body.replaceChildren(h('div', { class: 'note error', role: 'alert' }, `Cannot show the changes: ${answer?.error ?? 'not connected'}`));
      return;
    }
    this.draw(answer.data);
  }

  close(): void {
    if (this.panel.hidden) return;
    this.panel.hidden = true;
    this.opener?.focus();
  }

  private say(text: string, kind: 'ok' | 'error' | '' = ''): void {
    this.status.textContent = text;
    this.status.dataset.kind = kind;
  }

  private draw(changes: Changes): void {
    this.options.changed(changes.conversation_id, changes.worktree);
    const { worktree } = changes;
    const summary = h(
      'div',
      { class: 'changes-summary' },
      h('div', { class: 'changes-branch' }, h('code', {}, worktree.branch), worktree.base_branch ? h('span', { class: 'changes-base' }, ` from ${worktree.base_branch}`) : null),
      h(
        'div',
        { class: 'changes-counts' },
        `${changes.files.length} file${changes.files.length === 1 ? '' : 's'} changed · ${changes.commits} commit${changes.commits === 1 ? '' : 's'} · ${changes.uncommitted_files} not committed`,
      ),
      worktree.base_moved ? h('div', { class: 'changes-base-moved', role: 'note' }, `⚠ ${worktree.base_branch ?? 'The base'} moved on since this branch was made: landing may conflict.`) : null,
      worktree.state !== 'active' ? h('div', { class: 'changes-state' }, `This worktree is ${worktree.state}.`) : null,
      this.editorButtons(changes.conversation_id, worktree),
    );
    const files = changes.files.length
      ? h('div', { class: 'changes-files' }, ...changes.files.map((file) => this.fileElement(changes.conversation_id, file)))
      : h('div', { class: 'changes-empty' }, 'No changes against the base.');
    this.body.replaceChildren(summary, files, ...(worktree.state === 'active' ? this.actions(changes) : []));
  }

  private editorButtons(conversationId: string, worktree: WorktreeInfo): HTMLElement | null {
    const editor = this.options.editor;
    if (!editor || worktree.state !== 'active') return null;
    return h(
      'div',
      { class: 'changes-row' },
      h('button', { type: 'button', class: 'button secondary change-review-editor', onclick: () => editor.review(conversationId) }, 'Open in the diff editor'),
      h('button', { type: 'button', class: 'button secondary change-open-worktree', onclick: () => editor.openWorktree(conversationId) }, 'Open the worktree in a new window'),
    );
  }

  private fileElement(conversationId: string, file: ChangedFile): HTMLElement {
    const revert = h('button', { type: 'button', class: 'button secondary change-revert-file', 'aria-label': `Revert file ${exactName(file.path)}` }, 'Revert file');
    revert.addEventListener('click', () => void this.revert(conversationId, file.path, undefined, revert));
    const head = h(
      'div',
      { class: 'change-file-head' },
      h('span', { class: 'diff-path' }, file.old_path ? `${exactName(file.old_path)} → ${exactName(file.path)}` : exactName(file.path)),
      h('span', { class: 'change-file-status badge', 'data-status': file.status }, STATUS_TEXT[file.status]),
      diffStats(file.additions, file.deletions),
      revert,
    );
    const body = file.binary ? [h('div', { class: 'diff-note' }, 'Binary file: no lines to show.')] : file.hunks.map((hunk) => this.hunkElement(conversationId, file, hunk));
    if (file.cut) body.push(h('div', { class: 'diff-truncated', role: 'note' }, 'Only the first hunks are shown: the diff is longer.'));
    return h('section', { class: 'change-file preview diff', 'data-path': file.path, 'aria-label': exactName(file.path) }, head, h('div', { class: 'diff-body' }, ...body));
  }

  private hunkElement(conversationId: string, file: ChangedFile, hunk: ChangeHunk): HTMLElement {
    // The renderer reads unified diff text: the hunk's header and lines are exactly that.
    const parsed = parseUnifiedDiff([hunk.header, ...hunk.lines].join('\n'));
    const lines = (parsed.hunks[0]?.lines ?? []).map((line) => {
      const element = diffLineElement(line);
      // A line of the file as changed can be commented on: tap it, type, send.
      if (line.newLine !== undefined) {
        element.classList.add('change-line');
        element.dataset.line = String(line.newLine);
        element.addEventListener('click', () => this.comment(conversationId, file, hunk, section, line.newLine!));
      }
      return element;
    });
    const firstChanged = parsed.hunks[0]?.lines.find((line) => line.kind === 'add')?.newLine ?? hunk.new_start;
    // Named with the visible word first (voice control says what it sees), then which hunk: every hunk has the same two buttons.
    const where = `${exactName(file.path)}, line ${Math.max(1, firstChanged)}`;
    const revert = h('button', { type: 'button', class: 'button secondary change-revert-hunk', 'aria-label': `Revert this hunk of ${where}` }, 'Revert');
    const comment = h('button', { type: 'button', class: 'button secondary change-comment', 'aria-label': `Comment on ${where}` }, 'Comment');
    const section: HTMLElement = h(
      'div',
      { class: 'diff-hunk change-hunk', 'data-hunk-id': hunk.id },
      h('div', { class: 'change-hunk-head' }, h('span', { class: 'diff-hunk-header', title: hunk.header }, hunk.header), h('span', { class: 'change-hunk-actions' }, comment, revert)),
      ...lines,
    );
    revert.addEventListener('click', () => void this.revert(conversationId, file.path, hunk.id, revert));
    comment.addEventListener('click', () => this.comment(conversationId, file, hunk, section, Math.max(1, firstChanged)));
    return section;
  }

  /** The comment form under the hunk, for `line` (tapping another line of the hunk moves it there). */
  private comment(conversationId: string, file: ChangedFile, hunk: ChangeHunk, section: HTMLElement, line: number): void {
    for (const chosen of Array.from(section.querySelectorAll('.change-line[data-chosen]'))) chosen.removeAttribute('data-chosen');
    section.querySelector(`.change-line[data-line="${line}"]`)?.setAttribute('data-chosen', 'true');
    const existing = section.querySelector<HTMLFormElement>('.change-comment-form');
    if (existing) {
      existing.dataset.line = String(line);
      existing.querySelector('.change-comment-label')!.textContent = `Comment on line ${line} of ${exactName(file.path)}`;
      existing.querySelector('textarea')?.focus();
      return;
    }
    const inputId = uniqueId('ra-change-comment');
    const input = h('textarea', { id: inputId, class: 'change-comment-input', rows: 3, required: true });
    const send = h('button', { type: 'submit', class: 'button primary change-comment-send' }, 'Send');
    const cancel = h('button', { type: 'button', class: 'button secondary change-comment-cancel' }, 'Cancel');
    const form = h(
      'form',
      { class: 'change-comment-form', 'data-line': String(line) },
      h('label', { class: 'change-comment-label', for: inputId }, `Comment on line ${line} of ${exactName(file.path)}`),
      input,
      h('div', { class: 'changes-row' }, send, cancel),
    );
    cancel.addEventListener('click', () => {
      form.remove();
      section.querySelector('.change-line[data-chosen]')?.removeAttribute('data-chosen');
    });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      const answer = this.options.call({ type: 'comment_on_change', conversation_id: conversationId, path: file.path, line: Number(form.dataset.line), hunk_id: hunk.id, comment: text, stream: true });
      form.remove();
      this.close();
      this.options.commented(conversationId, answer);
    });
    section.append(form);
    input.focus();
  }

  private async revert(conversationId: string, path: string, hunkId: string | undefined, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    const answer = await this.options.call({ type: 'revert_changes', conversation_id: conversationId, path, ...(hunkId ? { hunk_id: hunkId } : {}) });
    if (conversationId !== this.conversationId) return;
    if (answer?.status !== 'ok') {
      button.disabled = false;
      return this.say(`Could not revert: ${answer?.error ?? 'not connected'}`, 'error');
    }
    this.draw(answer.data);
    this.say(hunkId ? `Reverted a hunk of ${exactName(path)}.` : `Reverted ${exactName(path)}.`, 'ok');
  }

  /** Commit, Land, Push, Discard: each its own group at the end of the sheet. */
  private actions(changes: Changes): HTMLElement[] {
    const id = changes.conversation_id;
    const out: HTMLElement[] = [];
    if (changes.uncommitted_files > 0) out.push(this.commitGroup(id));
    // Only commits land: what is not committed yet is committed first (land_changes says nothing_to_land).
    if (changes.commits > 0) out.push(this.landGroup(id, changes));
    if (changes.commits > 0) out.push(this.pushGroup(id));
    out.push(this.discardGroup(id));
    return out;
  }

  private commitGroup(conversationId: string): HTMLElement {
    const inputId = uniqueId('ra-commit-message');
    const message = h('textarea', { id: inputId, class: 'change-commit-message', rows: 3, placeholder: 'What this change does' });
    const draft = h('button', { type: 'button', class: 'button secondary change-draft', title: 'The model writes a message from the diff' }, 'Draft a message');
    const commit = h('button', { type: 'button', class: 'button primary change-commit' }, 'Commit');
    draft.addEventListener('click', async () => {
      draft.disabled = true;
      this.say('The model is drafting a message…');
      const answer = await this.options.call({ type: 'draft_commit_message', conversation_id: conversationId });
      draft.disabled = false;
      if (answer?.status !== 'ok') return this.say(`No draft: ${answer?.error ?? 'not connected'}`, 'error');
      message.value = answer.data.message;
      this.say('Drafted: edit it if you like, then Commit.', 'ok');
    });
    commit.addEventListener('click', async () => {
      if (!message.value.trim()) {
        message.focus();
        return this.say('Type a commit message, or tap Draft a message.', 'error');
      }
      commit.disabled = true;
      const answer = await this.options.call({ type: 'commit_changes', conversation_id: conversationId, message: message.value });
      commit.disabled = false;
      if (conversationId !== this.conversationId) return;
      if (answer?.status !== 'ok') return this.say(`Could not commit: ${answer?.error ?? 'not connected'}`, 'error');
      this.draw(answer.data.changes);
      this.say(`Committed ${answer.data.commit.slice(0, 7)}.`, 'ok');
    });
    return h(
      'section',
      { class: 'changes-group change-commit-group', 'aria-label': 'Commit' },
      h('label', { class: 'changes-group-title', for: inputId }, 'Commit message'),
      message,
      h('div', { class: 'changes-row' }, draft, commit),
    );
  }

  private landGroup(conversationId: string, changes: Changes): HTMLElement {
    const selectId = uniqueId('ra-land-method');
    const method = h('select', { id: selectId, class: 'change-land-method' }, ...(['merge', 'squash', 'rebase'] as const).map((m) => h('option', { value: m }, METHOD_TEXT[m])));
    const land = h('button', { type: 'button', class: 'button primary change-land' }, `Land into ${changes.worktree.base_branch ?? 'the base'}`);
    const outcome = h('div', { class: 'change-land-outcome' });
    land.addEventListener('click', async () => {
      land.disabled = true;
      const answer = await this.options.call({ type: 'land_changes', conversation_id: conversationId, method: method.value as LandMethod });
      land.disabled = false;
      if (answer?.status !== 'ok') return this.say(`Could not land: ${answer?.error ?? 'not connected'}`, 'error');
      const result = answer.data;
      if (result.blocked) {
        outcome.replaceChildren(
          h(
            'div',
            { class: 'change-land-blocked', role: 'alert', 'data-reason': result.blocked.reason },
            h('div', {}, `Nothing was changed: ${result.blocked.message}`),
            result.blocked.files.length ? h('ul', { class: 'change-land-files' }, ...result.blocked.files.map((file) => h('li', {}, h('code', {}, exactName(file))))) : null,
          ),
        );
        return;
      }
      outcome.replaceChildren();
      await this.open(conversationId);
      this.say(`Landed into ${changes.worktree.base_branch ?? 'the base'}${result.commit ? ` (${result.commit.slice(0, 7)})` : ''}.`, 'ok');
    });
    return h(
      'section',
      { class: 'changes-group change-land-group', 'aria-label': 'Land' },
      h('label', { class: 'changes-group-title', for: selectId }, 'Land as'),
      h('div', { class: 'changes-row' }, method, land),
      outcome,
    );
  }

  private pushGroup(conversationId: string): HTMLElement {
    const push = h('button', { type: 'button', class: 'button secondary change-push' }, 'Push the branch');
    const outcome = h('div', { class: 'change-push-outcome' });
    push.addEventListener('click', async () => {
      push.disabled = true;
      const answer = await this.options.call({ type: 'push_changes', conversation_id: conversationId });
      push.disabled = false;
      if (answer?.status !== 'ok') return this.say(`Could not push: ${answer?.error ?? 'not connected'}`, 'error');
      const { remote, branch, compare_url } = answer.data;
      outcome.replaceChildren(
        h('span', {}, `Pushed to ${remote}/${branch}. `),
        ...(compare_url ? [h('a', { class: 'change-compare-link', href: compare_url, target: '_blank', rel: 'noopener noreferrer' }, 'Open a pull request')] : []),
      );
    });
    return h('section', { class: 'changes-group change-push-group', 'aria-label': 'Push' }, push, outcome);
  }

  private discardGroup(conversationId: string): HTMLElement {
    const discard = h('button', { type: 'button', class: 'button danger change-discard' }, 'Discard…');
    const group = h('section', { class: 'changes-group change-discard-group', 'aria-label': 'Discard' }, discard);
    discard.addEventListener('click', () => {
      const yes = h('button', { type: 'button', class: 'button danger change-discard-confirm' }, 'Discard');
      const no = h('button', { type: 'button', class: 'button secondary change-discard-cancel' }, 'Keep');
      const box = h(
        'div',
        { class: 'confirm', role: 'group', 'aria-label': 'Confirm discard' },
        h('span', {}, 'Remove the worktree and its branch? Work not landed is lost.'),
        h('div', { class: 'changes-row' }, yes, no),
      );
      discard.hidden = true;
      group.append(box);
      yes.focus();
      no.addEventListener('click', () => {
        box.remove();
        discard.hidden = false;
        discard.focus();
      });
      yes.addEventListener('click', async () => {
        yes.disabled = no.disabled = true;
        const answer = await this.options.call({ type: 'discard_changes', conversation_id: conversationId, confirm: true });
        if (answer?.status !== 'ok') {
          box.remove();
          discard.hidden = false;
          return this.say(`Could not discard: ${answer?.error ?? 'not connected'}`, 'error');
        }
        this.body.replaceChildren(h('div', { class: 'changes-empty' }, 'The worktree and its branch were removed.'));
        this.options.changed(conversationId, null);
        this.say('Discarded.', 'ok');
      });
    });
    return group;
  }
}
