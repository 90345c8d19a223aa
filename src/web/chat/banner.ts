/** The update banner: which side must be updated when the hello says the two speak different protocols. */
import { h } from './dom';

const UPDATE_TEXT = {
  client: 'This page is older than the service: reload it (or update the extension) so no event is missed or misread.',
  service: 'The service is older than this page: update Remote Assistant on the computer so no event is missed or misread.',
} as const;

/** Says which side must be updated when the hello's `update` says the two speak different protocols. */
export class UpdateBanner {
  readonly element: HTMLElement;
  private readonly text: HTMLElement;

  constructor() {
    this.text = h('div', { class: 'banner-text' });
    const reload = h('button', { type: 'button', class: 'button secondary reload', onclick: () => location.reload() }, 'Reload');
    this.element = h('div', { class: 'update-banner', role: 'alert', hidden: true }, h('strong', {}, 'Update needed'), this.text, h('div', { class: 'banner-actions' }, reload));
  }

  show(update: 'client' | 'service' | undefined): void {
    this.element.hidden = !update;
    if (!update) return;
    this.element.dataset.update = update;
    this.text.textContent = UPDATE_TEXT[update];
    (this.element.querySelector('.reload') as HTMLElement).hidden = update !== 'client';
  }
}
