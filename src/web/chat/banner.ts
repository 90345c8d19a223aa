/** The provider-error banner: the service's message, and in the editor the commands that fix it. */
import type { ServiceConnection } from '../connection';
import { h } from './dom';

export class ErrorBanner {
  readonly element: HTMLElement;
  private readonly text: HTMLElement;

  constructor(connection: ServiceConnection) {
    this.text = h('div', { class: 'banner-text' });
    const actions = h('div', { class: 'banner-actions' });
    if (connection.action) {
      const act = connection.action.bind(connection);
      actions.append(
        h('button', { type: 'button', class: 'button secondary', onclick: () => act('setApiKey') }, 'Set API Key'),
        h('button', { type: 'button', class: 'button secondary', onclick: () => act('selectModel') }, 'Select Model'),
      );
    }
    actions.append(h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Dismiss', onclick: () => this.hide() }, '✕'));
    this.element = h('div', { class: 'banner', role: 'alert', hidden: true }, h('strong', {}, 'The model provider failed'), this.text, actions);
  }

  show(message: string): void {
    this.text.textContent = message;
    this.element.hidden = false;
  }

  hide(): void {
    this.element.hidden = true;
  }
}
