/**
 * The page's deep link (docs/protocol.md, "Web Push"): `?conversation=<id>` shows that conversation,
 * `&view=changes` its Changes view (a "ready for review" notification),
 * `&request=<id>` brings its prompt card into view, `&answer=allow|deny` (an action tapped on a
 * notification) answers the request once the page has authenticated: the service worker holds no
 * credential. It comes from the worker's message when a tap finds the page already open, or from the
 * address bar at start, where an answer counts only with the worker's proof of a tap (tap-tokens.ts):
 * a link anyone can send must never approve a tool. The query leaves the address bar once read.
 */
import type { ServiceConnection } from '../connection';
import { h } from '../chat/dom';
import { answerText } from '../permission-answer-text';
import { isOpenMessage } from './open-message';
import { redeemTap } from './tap-tokens';

export interface DeepLink {
  /** Which paired machine (its slot, machines/machine-store.ts): set by that machine's worker. */
  machine?: string;
  conversation?: string;
  request?: string;
  answer?: 'allow' | 'deny';
  /** The worker's proof that `answer` is a tap on our notification (tap-tokens.ts); absent in a message from the worker itself. */
  tap?: string;
  /** `changes`: the conversation's Changes view (a "ready for review" notification), once connected. */
  view?: 'changes';
}

/** The chat app, as far as a link needs it. */
export interface LinkTarget {
  openConversation(conversationId: string, view?: 'chat' | 'changes'): void;
}

const ID = /^[\w.:-]{1,200}$/;

/**
 * A tapped notification's link, posted by our own worker to the page already open (same origin: a tap,
 * no proof needed, so it is followed as trusted). The page picks which machine's links follow it.
 */
export function onWorkerLink(listener: (link: DeepLink) => void): void {
  navigator.serviceWorker?.addEventListener('message', (event) => {
    if (event.origin && event.origin !== location.origin) return;
    if (!isOpenMessage(event.data)) return;
    const link = readDeepLink(event.data.url);
    if (link) listener(link);
  });
}

/** The link in a page URL; undefined when it names nothing (or something that is not an id). */
export function readDeepLink(href: string): DeepLink | undefined {
  let query: URLSearchParams;
  try {
    query = new URL(href).searchParams;
  } catch {
    return undefined;
  }
  const id = (name: string) => {
    const value = query.get(name);
    return value && ID.test(value) ? value : undefined;
  };
  const answer = query.get('answer');
  const link: DeepLink = {
    machine: id('machine'),
    conversation: id('conversation'),
    request: id('request'),
    answer: answer === 'allow' || answer === 'deny' ? answer : undefined,
    tap: id('tap'),
    view: query.get('view') === 'changes' ? 'changes' : undefined,
  };
  if (!link.request) link.answer = undefined;
  return link.conversation || link.request ? link : undefined;
}

export class DeepLinks {
  private pending: (DeepLink & { trusted: boolean }) | undefined;
  private readonly notice = h('div', { class: 'deep-link-notice', role: 'status', hidden: true });

  constructor(
    private readonly connection: ServiceConnection,
    private readonly target: LinkTarget,
    root: HTMLElement,
  ) {
    root.appendChild(this.notice);
    connection.onState((state) => {
      if (state.state === 'open') void this.act();
    });
  }

  /**
   * Follows a link: the conversation at once, the answer as soon as the service session is open. An
   * answer from the address bar counts only with the worker's proof of a tap (`trusted` false): a
   * link from anywhere else only shows the prompt.
   */
  follow(link: DeepLink, trusted = false): void {
    this.pending = { ...link, trusted };
    if (link.conversation) this.target.openConversation(link.conversation);
    if (this.connection.state.state === 'open') void this.act();
  }

  private async act(): Promise<void> {
    const link = this.pending;
    if (!link) return;
    this.pending = undefined;
    clearQuery();
    // The Changes view reads the changes from the service: shown once the session is open.
    if (link.conversation && link.view === 'changes') this.target.openConversation(link.conversation, 'changes');
    if (link.request && link.answer && (link.trusted || (link.tap && (await redeemTap(location.href, link.tap, link.request, link.answer))))) {
      await this.answer(link.request, link.answer);
      return;
    }
    if (link.request && link.answer) this.show('A link cannot answer for you: choose on the prompt.');
    if (link.request) void this.reveal(link.request);
  }

  private async answer(requestId: string, decision: 'allow' | 'deny'): Promise<void> {
    let outcome: string;
    try {
      // A duplicate of the decision in force (tapped twice, or answered elsewhere the same way) says who decided.
      outcome = answerText(await this.connection.request({ type: 'permission_response', request_id: requestId, decision }), this.connection.actingAs).text;
    } catch {
      // The session dropped before the answer: try again when it is back.
      this.pending = { request: requestId, answer: decision, trusted: true };
      return;
    }
    this.show(outcome);
  }

  /** Brings the request's card into view once it is drawn (pending requests arrive after authentication). */
  private async reveal(requestId: string): Promise<void> {
    const selector = `.permission-card[data-request-id="${CSS.escape(requestId)}"]`;
    const card = document.querySelector<HTMLElement>(selector) ?? (await appearing(selector, 15_000));
    if (!card) return;
    card.classList.add('linked');
    card.scrollIntoView({ block: 'center' });
    card.querySelector<HTMLElement>('button')?.focus({ preventScroll: true });
  }

  private show(text: string): void {
    this.notice.textContent = text;
    this.notice.hidden = false;
    setTimeout(() => (this.notice.hidden = true), 6000);
  }
}

/** Removes the link's query from the address bar (keeping the page's path). */
function clearQuery(): void {
  if (location.search) history.replaceState(history.state, '', location.pathname);
}

function appearing(selector: string, timeoutMs: number): Promise<HTMLElement | undefined> {
  return new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      const found = document.querySelector<HTMLElement>(selector);
      if (found) done(found);
    });
    const timer = setTimeout(() => done(undefined), timeoutMs);
    const done = (found: HTMLElement | undefined) => {
      observer.disconnect();
      clearTimeout(timer);
      resolve(found);
    };
    observer.observe(document.body, { childList: true, subtree: true });
  });
}
