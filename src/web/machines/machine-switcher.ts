/**
 * The machine switcher: a header button naming the machine on screen (with how many things wait for the
 * user on all machines) that opens a sheet listing every paired machine with its state (online,
 * offline, N waiting, running), to switch to, rename or remove, "Add a computer" (add-machine.ts), and
 * the combined "Needs you" list.
 */
import { BIN, h, strokeIcon } from '../chat/dom';
import { AddMachine } from './add-machine';
import { finishedCount, needsYouCount, stateLabel, type MachineEntry } from './machine-entry';
import { NeedsYouList, type NeedsYouActions } from './needs-you';

/** A computer (a screen on a stand) on a 16-unit grid: the chip while only one computer is paired (chat.css). */
const COMPUTER = 'M2.5 3h11v7.5h-11zM5.5 13.5h5M8 10.5v3';

export interface SwitcherActions extends NeedsYouActions {
  select(machineId: string): void;
  rename(machineId: string): void;
  remove(machineId: string): void;
  /** Pairs with another machine from its link (resolves to what went wrong, or undefined once added). */
  add(link: string): Promise<string | undefined>;
}

export class MachineSwitcher {
  readonly button: HTMLButtonElement;
  readonly panel: HTMLElement;
  private readonly buttonName = h('span', { class: 'machine-switch-name' });
  private readonly badge = h('span', { class: 'machine-switch-badge', hidden: true });
  /** What the badge's number means, said to a screen reader (the button's name is its text: no aria-label that would differ from what is seen). */
  private readonly badgeMeaning = h('span', { class: 'visually-hidden' });
  private readonly list = h('ul', { class: 'machine-list' });
  private readonly needsYou: NeedsYouList;
  private readonly addMachine: AddMachine;

  constructor(private readonly actions: SwitcherActions) {
    this.button = h(
      'button',
      { type: 'button', class: 'machine-switch', 'aria-haspopup': 'dialog', 'aria-expanded': 'false', 'aria-controls': 'ra-machines' },
      h('span', { class: 'visually-hidden' }, 'Computer: '),
      h('span', { class: 'machine-switch-glyph', 'aria-hidden': 'true' }, strokeIcon(COMPUTER, 16, 1.3)),
      this.buttonName,
      this.badge,
      this.badgeMeaning,
    );
    this.button.addEventListener('click', () => this.toggle());
    this.needsYou = new NeedsYouList({
      open: (machineId, link) => {
        this.toggle(false);
        actions.open(machineId, link);
      },
      answer: (machineId, requestId, decision) => actions.answer(machineId, requestId, decision),
    });
    this.addMachine = new AddMachine({ add: (link) => actions.add(link) });
    const close = h('button', { type: 'button', class: 'icon-button machines-close', 'aria-label': 'Close' }, '✕');
    close.addEventListener('click', () => this.toggle(false));
    this.panel = h(
      'div',
      { class: 'machines-panel', id: 'ra-machines', role: 'dialog', 'aria-label': 'Computers', hidden: true },
      h('div', { class: 'machines-head' }, h('h2', {}, 'Computers'), close),
      this.list,
      this.addMachine.element,
      this.needsYou.element,
    );
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !this.panel.hidden) this.toggle(false);
    });
  }

  render(entries: readonly MachineEntry[], currentId: string | undefined): void {
    const current = entries.find((entry) => entry.machine.id === currentId);
    this.buttonName.textContent = current?.machine.name ?? 'Computers';
    // One computer: nothing to tell apart, so a phone's chip is a glyph and the title has the room (chat.css).
    this.button.classList.toggle('only', entries.length === 1);
    const count = needsYouCount(entries);
    const finished = finishedCount(entries);
    this.badge.hidden = count === 0 && finished === 0;
    // Prompts are counted; finished runs alone show as a dot.
    this.badge.textContent = count ? String(count) : '•';
    this.badge.dataset.kind = count ? 'prompts' : 'finished';
    // Said to a screen reader after the badge (the button's name is its text: no aria-label).
    this.badgeMeaning.textContent = count ? ` waiting for you${finished ? `, ${finished} finished` : ''}` : finished ? ` ${finished} finished` : '';
    if (current) this.button.dataset.state = stateLabel(current.status).state;
    this.list.replaceChildren(...entries.map((entry) => this.row(entry, entry.machine.id === currentId)));
    this.needsYou.render(entries);
  }

  toggle(open = this.panel.hidden): void {
    this.panel.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    if (!open) this.addMachine.toggle(false);
    if (open) this.panel.querySelector<HTMLElement>('.machine-select')?.focus();
  }

  /** Opens the sheet on "Add a computer" (paste a link, a photo of the QR code, the camera); also "Pair again". */
  openAdd(): void {
    this.toggle(true);
    this.addMachine.toggle(true);
  }

  /** Opens "Add a computer" on `link` (a pairing link opened into the page) and tries it. */
  tryLink(link: string): void {
    this.toggle(true);
    this.addMachine.tryOpened(link);
  }

  private row(entry: MachineEntry, current: boolean): HTMLElement {
    const { state, label } = stateLabel(entry.status);
    const id = entry.machine.id;
    const select = h(
      'button',
      { type: 'button', class: 'machine-select', 'aria-current': current ? 'true' : 'false' },
      h('span', { class: 'machine-name' }, entry.machine.name),
      h('span', { class: 'machine-state' }, label),
    );
    select.addEventListener('click', () => {
      this.toggle(false);
      this.actions.select(id);
    });
    const rename = h('button', { type: 'button', class: 'icon-button machine-rename', 'aria-label': `Rename ${entry.machine.name}` }, '✎');
    rename.addEventListener('click', () => this.actions.rename(id));
    // A bin, not a ✕: the sheet's close is the ✕ just above.
    const remove = h('button', { type: 'button', class: 'icon-button machine-remove', 'aria-label': `Remove ${entry.machine.name}`, title: 'Remove' }, strokeIcon(BIN, 16, 1.3));
    remove.addEventListener('click', () => this.actions.remove(id));
    return h('li', { class: 'machine', 'data-machine-id': id, 'data-state': state }, h('span', { class: 'dot', 'aria-hidden': 'true' }), select, rename, remove);
  }
}
