/**
 * "Permission rules" (docs/protocol.md, "Rules"): the allow and deny rules of `get_config`
 * (`permission_rules`), each removable, and a field to add one. Every change saves the whole object with
 * `update_config`; the service validates it (all or nothing) and its error is shown as it says it, so
 * the page holds no copy of the rule syntax. Only the owner may change rules: a session user's save is
 * refused (`unauthorized`) and the section turns read-only.
 */
import type { ServiceConnection } from '../connection';
import { h } from './dom';
import type { PermissionRules } from '../../protocol';
import { sendCommand } from './supervision-wire';

type ListName = keyof PermissionRules;

const LIST_LABEL: Record<ListName, string> = { allow: 'Allow', deny: 'Deny' };

export class RulesEditor {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private readonly error: HTMLElement;
  private readonly addList: HTMLSelectElement;
  private readonly addInput: HTMLInputElement;
  private readonly addButton: HTMLButtonElement;
  private rules: PermissionRules | undefined;
  private readOnly = false;
  private busy = false;

  constructor(private readonly connection: ServiceConnection) {
    this.body = h('div', { class: 'rules-lists' });
    this.error = h('div', { class: 'rules-error', role: 'alert' });
    this.addList = h('select', { class: 'rules-add-list', 'aria-label': 'Add to' }, h('option', { value: 'allow' }, 'Allow'), h('option', { value: 'deny' }, 'Deny'));
    this.addInput = h('input', {
      class: 'rules-add-input',
      type: 'text',
      placeholder: 'run_command:git status',
      'aria-label': 'New rule',
      autocomplete: 'off',
      spellcheck: 'false',
      autocapitalize: 'off',
    });
    this.addButton = h('button', { type: 'submit', class: 'button secondary rules-add-button' }, 'Add');
    const form = h('form', { class: 'rules-add' }, this.addList, this.addInput, this.addButton);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.add();
    });
    this.element = h(
      'details',
      { class: 'rules' },
      h('summary', { class: 'rules-open drawer-row' }, 'Permission rules'),
      h(
        'div',
        { class: 'rules-editor' },
        h('p', { class: 'rules-help' }, 'Calls matching an allow rule run without asking; deny rules win over allow. A rule is a tool name or tool:subject, with * as a wildcard.'),
        this.body,
        form,
        this.error,
      ),
    );
    this.element.addEventListener('toggle', () => {
      if ((this.element as HTMLDetailsElement).open) void this.refresh();
    });
    this.render();
  }

  /** Reads the rules again (opened, reconnected, or `config.changed` named them). */
  async refresh(): Promise<void> {
    if (!(this.element as HTMLDetailsElement).open) return;
    const answer = await sendCommand(this.connection, { type: 'get_config' });
    if (answer?.status === 'ok') {
      this.rules = answer.data.permission_rules;
      this.render();
    }
  }

  private async add(): Promise<void> {
    const rule = this.addInput.value.trim();
    if (!rule || !this.rules) return;
    const list = this.addList.value as ListName;
    if (this.rules[list].includes(rule)) {
      this.error.textContent = `“${rule}” is already a ${list} rule.`;
      return;
    }
    if (await this.save({ ...this.rules, [list]: [...this.rules[list], rule] })) this.addInput.value = '';
  }

  private async remove(list: ListName, index: number): Promise<void> {
    if (!this.rules) return;
    await this.save({ ...this.rules, [list]: this.rules[list].filter((_, i) => i !== index) });
  }

  /** Saves the whole object; the rules on screen change only once the service took them. */
  private async save(next: PermissionRules): Promise<boolean> {
    if (this.busy) return false;
    this.busy = true;
    this.error.textContent = '';
    this.setDisabled(true);
    const answer = await sendCommand(this.connection, { type: 'update_config', config: { permission_rules: next } });
    this.busy = false;
    if (answer?.status === 'ok') this.rules = next;
    else if (answer?.code === 'unauthorized') {
      this.readOnly = true;
      this.error.textContent = `Only the owner can change the rules: ${answer.error}`;
    } else this.error.textContent = answer ? answer.error : 'Not connected.';
    this.render();
    return answer?.status === 'ok';
  }

  private setDisabled(disabled: boolean): void {
    for (const control of Array.from(this.element.querySelectorAll<HTMLButtonElement | HTMLInputElement | HTMLSelectElement>('button, input, select'))) control.disabled = disabled;
  }

  private render(): void {
    if (!this.rules) {
      this.body.replaceChildren(h('p', { class: 'rules-empty' }, (this.element as HTMLDetailsElement | undefined)?.open ? 'This service does not report its rules.' : ''));
      this.setDisabled(true);
      return;
    }
    const rules = this.rules;
    this.body.replaceChildren(...(['allow', 'deny'] as const).map((list) => this.listElement(list, rules[list])));
    this.setDisabled(this.readOnly);
    this.element.classList.toggle('read-only', this.readOnly);
  }

  private listElement(list: ListName, rules: string[]): HTMLElement {
    const items = rules.map((rule, index) => {
      const remove = h('button', { type: 'button', class: 'icon-button rule-remove', 'aria-label': `Remove ${list} rule ${rule}`, title: 'Remove' }, '✕');
      remove.addEventListener('click', () => void this.remove(list, index));
      return h('li', { class: 'rule', 'data-list': list }, h('code', { class: 'rule-text' }, rule), remove);
    });
    return h('section', { class: 'rules-list', 'data-list': list }, h('h3', {}, LIST_LABEL[list]), items.length ? h('ul', {}, ...items) : h('p', { class: 'rules-empty' }, 'No rules.'));
  }
}
