/** The top bar: drawer toggle, title, connection state, permission mode. */
import type { PermissionMode } from '../../protocol';
import type { WorktreeInfo } from '../../protocol/worktrees';
import type { ConnectionStatus } from '../connection';
import { changedText } from './changes-view';
import { h } from './dom';
import { UsageMeter } from './usage-view';

const STATE_LABEL: Record<ConnectionStatus['state'], string> = {
  connecting: 'Connecting…',
  open: 'Connected',
  closed: 'Disconnected',
  error: 'Error',
};

export class Header {
  readonly element: HTMLElement;
  readonly drawerToggle: HTMLButtonElement;
  private readonly titleText: HTMLElement;
  private readonly connection: HTMLElement;
  private readonly connectionText: HTMLElement;
  /** The countdown ("retrying in 2 s"): its own span, so a small phone's bar can drop it and keep the state's word and a hint. */
  private readonly connectionDetail: HTMLElement;
  private readonly mode: HTMLSelectElement;
  private modeValue: PermissionMode | undefined;
  private pairAgain: HTMLButtonElement | undefined;
  private readonly waiting: HTMLButtonElement;
  /** "3 changed" on a conversation in its own worktree: opens its Changes view. */
  readonly changes: HTMLButtonElement;
  /** The conversation's tokens, cost and context fullness (usage-view.ts). */
  readonly usage = new UsageMeter();

  constructor(onModeChange: (mode: PermissionMode, previous: PermissionMode | undefined) => void, drawerId: string) {
    this.drawerToggle = h('button', { type: 'button', class: 'icon-button drawer-toggle', 'aria-label': 'Conversations', 'aria-expanded': 'false', 'aria-controls': drawerId }, '☰');
    this.titleText = h('h1', { class: 'title' }, 'New chat');
    this.connectionDetail = h('span', { class: 'connection-detail' });
    this.connectionText = h('span', { class: 'connection-text' }, STATE_LABEL.connecting, this.connectionDetail);
    this.connection = h('span', { class: 'connection', role: 'status', 'data-state': 'connecting' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), this.connectionText);
    this.mode = h(
      'select',
      { class: 'mode-select', 'aria-label': 'Tool permission mode', disabled: true },
      h('option', { value: 'ask' }, 'Ask'),
      h('option', { value: 'allow' }, 'Allow'),
      h('option', { value: 'deny' }, 'Deny'),
    );
    this.mode.addEventListener('change', () => {
      const previous = this.modeValue;
      this.modeValue = this.mode.value as PermissionMode;
      this.mode.dataset.mode = this.modeValue;
      onModeChange(this.modeValue, previous);
    });
    // How many permission requests wait for an answer here: tapping it shows the first one.
    this.waiting = h('button', { type: 'button', class: 'waiting-count', hidden: true });
    this.changes = h('button', { type: 'button', class: 'changes-badge', hidden: true });
    this.element = h(
      'header',
      { class: 'topbar' },
      this.drawerToggle,
      this.titleText,
      this.usage.element,
      this.waiting,
      this.changes,
      this.connection,
      h('label', { class: 'mode', title: 'What happens when the assistant wants to run a tool' }, h('span', { class: 'mode-label' }, 'Tools'), this.mode),
    );
  }

  setWaiting(count: number): void {
    this.waiting.hidden = count === 0;
    // A class on the bar, not `:has()` (Firefox ESR 115 drops such a rule): media/chat.css's small-phone rules.
    this.element.classList.toggle('has-waiting', count > 0);
    this.waiting.textContent = `${count} waiting`;
    // The name starts with what is seen (a voice-control user says "1 waiting").
    this.waiting.setAttribute('aria-label', `${count} waiting: permission request${count === 1 ? '' : 's'} for you to answer`);
  }

  /** The conversation's worktree (null or absent: it works in the workspace, no badge). */
  setWorktree(worktree: WorktreeInfo | null | undefined): void {
    const shown = Boolean(worktree && worktree.state === 'active');
    this.changes.hidden = !shown;
    if (!worktree || !shown) return;
    this.changes.textContent = `${changedText(worktree)}${worktree.base_moved ? ' ⚠' : ''}`;
    this.changes.dataset.baseMoved = String(worktree.base_moved);
    const moved = worktree.base_moved ? `; ${worktree.base_branch ?? 'the base'} moved on since` : '';
    this.changes.setAttribute('aria-label', `${changedText(worktree)}: review the changes on ${worktree.branch}${moved}`);
    this.changes.title = `${worktree.branch}${moved}`;
  }

  onWaitingClick(listener: () => void): void {
    this.waiting.addEventListener('click', listener);
  }

  setTitle(title: string): void {
    this.titleText.textContent = title;
    this.titleText.title = title;
  }

  setState(state: ConnectionStatus): void {
    this.connection.dataset.state = state.state;
    const label = STATE_LABEL[state.state];
    // "Disconnected (hint; retrying in 3 s)": the countdown in its own span (a small phone drops it).
    const { detail, retryInSeconds } = state;
    const countdown = retryInSeconds === undefined ? undefined : `retrying in ${retryInSeconds} s`;
    if (countdown === undefined) {
      this.connectionText.replaceChildren(detail ? `${label} (${detail})` : label);
    } else if (!detail) {
      this.connectionDetail.textContent = ` (${countdown})`;
      this.connectionText.replaceChildren(label, this.connectionDetail);
    } else {
      this.connectionDetail.textContent = `; ${countdown}`;
      this.connectionText.replaceChildren(`${label} (${detail}`, this.connectionDetail, ')');
    }
    this.mode.disabled = state.state !== 'open' || this.modeValue === undefined;
    if (this.pairAgain) this.pairAgain.hidden = state.refused !== true;
  }

  /** "Pair again" after the connection's state, shown while the machine refuses this page's credential. */
  offerPairAgain(pair: () => void): void {
    this.pairAgain = h('button', { type: 'button', class: 'button primary pair-again', hidden: true, onclick: pair }, 'Pair again');
    this.connection.after(this.pairAgain);
  }

  setMode(mode: PermissionMode, connected: boolean): void {
    this.modeValue = mode;
    this.mode.value = mode;
    // "Allow" runs every tool unasked: the selector wears the warning colours while it is set (chat.css).
    this.mode.dataset.mode = mode;
    this.mode.disabled = !connected;
  }
}
