/**
 * What replies cost, on the chat page: a small line under each reply (tokens in and out, cost) and, in
 * the header, the conversation's total with a meter of how full the context window was on its last call
 * (docs/protocol.md, "Usage and cost"). An unknown price is left out (its title says so), never a guess; counted locally is "≈".
 */
import type { ConversationUsage, MessageUsage } from '../../protocol';
import { h } from './dom';

const count = (n: number) => n.toLocaleString('en-US');

/** 950, 3.3k, 1.2M: short enough for a phone's header. */
function compact(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Dollars: four decimals under a cent (a reply often costs less), else two. */
export function formatCost(cost: number): string {
  return cost > 0 && cost < 0.01 ? `$${cost.toFixed(4)}` : `$${cost.toFixed(2)}`;
}

/** The line under a reply, e.g. `1,000 in (400 cached) · 200 out · $0.0036`; without a price, the tokens alone (a trailing "—" told nothing). */
export function usageText(usage: MessageUsage): string {
  const approx = usage.estimated ? '≈' : '';
  const cached = usage.cached_tokens > 0 ? ` (${count(usage.cached_tokens)} cached)` : '';
  const tokens = `${approx}${count(usage.input_tokens)} in${cached} · ${approx}${count(usage.output_tokens)} out`;
  return usage.cost === null ? tokens : `${tokens} · ${formatCost(usage.cost)}`;
}

/** Puts (or replaces) the usage line of a reply's bubble; nothing when the reply carries none. */
export function attachUsage(bubble: HTMLElement, usage: MessageUsage | undefined): void {
  bubble.querySelector(':scope > .usage-line')?.remove();
  if (!usage) return;
  const title = `${usage.provider}/${usage.model}${usage.calls > 1 ? `, ${usage.calls} calls` : ''}${usage.estimated ? ', counted locally' : ''}${usage.cost === null ? ', no price known' : ''}`;
  bubble.append(h('div', { class: 'usage-line', title }, usageText(usage)));
}

/** The header's total of the conversation on screen and its context meter; hidden without usage. */
export class UsageMeter {
  readonly element: HTMLElement;
  private readonly total: HTMLElement;
  private readonly meter: HTMLMeterElement;
  /** compact_conversation: summarise the older turns now, beside the meter that tells how full the window is. */
  readonly compact: HTMLButtonElement;

  constructor() {
    this.total = h('span', { class: 'usage-total' });
    this.meter = h('meter', { class: 'context-meter', min: '0', max: '1', low: '0.6', high: '0.85', optimum: '0' });
    this.compact = h('button', { type: 'button', class: 'compact-button', title: 'Summarise the earlier turns to free the context window' }, 'Compact');
    this.element = h('span', { class: 'usage-summary', 'aria-label': 'Usage of this conversation', hidden: true }, this.total, this.meter, this.compact);
  }

  show(usage: ConversationUsage | null | undefined): void {
    this.element.hidden = !usage;
    if (!usage) return;
    const approx = usage.estimated ? '≈' : '';
    const tokens = `${approx}${compact(usage.input_tokens + usage.output_tokens)} tokens`;
    // Priced: the tokens in a span of their own, which the narrowest screens leave out to keep the cost
    // (chat.css). Unpriced: the tokens alone, everywhere (a bare "—" in a bar tells nothing).
    if (usage.cost === null) this.total.replaceChildren(tokens);
    else this.total.replaceChildren(h('span', { class: 'usage-tokens' }, `${tokens} · `), formatCost(usage.cost));
    const { context_used: used, context_window: window } = usage;
    this.meter.hidden = used === null || window === null;
    if (used === null || window === null) return;
    const full = Math.min(1, used / window);
    this.meter.value = full;
    this.meter.setAttribute('value', String(Math.round(full * 1000) / 1000));
    this.meter.title = `Context: ${count(used)} of ${count(window)} tokens (${Math.round(full * 100)}%)`;
  }
}
