/**
 * The conversation's plan (the `todo` tool's checklist, docs/protocol.md "The plan"), drawn under the
 * header: a collapsible card "Plan · 3 of 7 done" with each step and its state. Hidden without a plan.
 */
import type { Plan, PlanStatus } from '../../protocol';
import { planSummaryOf } from '../../protocol/plan-summary';
import { h } from './dom';

const MARK: Record<PlanStatus, string> = { pending: '○', in_progress: '◐', done: '✓' };
const STATUS_LABEL: Record<PlanStatus, string> = { pending: 'to do', in_progress: 'in progress', done: 'done' };

/** "3 of 7 done": the plan card's summary and the conversation list row say it alike. */
export function planProgressText(summary: { done: number; total: number }): string {
  return `${summary.done} of ${summary.total} done`;
}

export class PlanView {
  readonly element: HTMLDetailsElement;
  private readonly summary: HTMLElement;
  private readonly list: HTMLOListElement;

  constructor() {
    this.summary = h('summary', { class: 'plan-summary' });
    this.list = h('ol', { class: 'plan-items' });
    this.element = h('details', { class: 'plan', hidden: true, open: true, 'aria-label': 'The assistant’s plan' }, this.summary, this.list);
  }

  /** Shows the plan (the whole list, as the model last wrote it); an empty one hides the card. */
  show(plan: Plan): void {
    this.element.hidden = plan.length === 0;
    this.summary.textContent = `Plan · ${planProgressText(planSummaryOf(plan))}`;
    this.list.replaceChildren(
      ...plan.map((item) =>
        h(
          'li',
          { class: 'plan-item', 'data-status': item.status, title: STATUS_LABEL[item.status] },
          h('span', { class: 'plan-mark', 'aria-label': STATUS_LABEL[item.status] }, MARK[item.status]),
          h('span', { class: 'plan-text' }, item.text),
        ),
      ),
    );
  }
}
