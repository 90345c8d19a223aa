/**
 * What the page says at a turn when the model provider fails: while a failure that may pass is waited
 * out ("Rate limited; retrying in 4 s", `turn.retrying`), and when the turn failed for good: in words a
 * person can act on from where they are, under the message that failed, with Retry on the page's own.
 * (Before s24 a banner at the top said the provider's own text, and nothing said a retry was waited for.)
 */
import type { ContextItem, Message, ProviderFailureReason, ViewEvent } from '../../protocol';
import type { ServiceConnection } from '../connection';
import { h } from './dom';
import type { FailedTurn } from './live-turn';
import type { MessageView } from './message-view';

type RetryingEvent = Extract<ViewEvent, { event: 'turn.retrying' }>;

/** What Retry sends again: the failed message's text, chips and attachments (a new message of its own). */
export interface RetryOf {
  text: string;
  context?: ContextItem[];
  attachments?: Message['attachments'];
}

export interface TurnNoticesDeps {
  messages: MessageView;
  connection: ServiceConnection;
  retry(message: RetryOf): void;
}

const VENDOR: Record<string, string> = { openai: 'OpenAI', anthropic: 'Anthropic' };

/** The provider as people name it; "the model provider" when not known. */
function vendorOf(provider: string | undefined): string {
  return provider ? (VENDOR[provider] ?? provider) : 'the model provider';
}

function capitalized(text: string): string {
  return text[0].toUpperCase() + text.slice(1);
}

/** A failed turn in words that say what to do (never the provider's text: `turn.ended` does not carry it). */
export function failureWords(reason: ProviderFailureReason | undefined, provider: string | undefined, error: string | undefined): string {
  const vendor = vendorOf(provider);
  switch (reason) {
    case 'auth':
      return `The computer's ${vendor} key was refused: set it on the computer, then retry.`;
    case 'not_configured':
      return 'No model is set up on the computer: choose a provider and a model there, then retry.';
    case 'rate_limited':
      return `${capitalized(vendor)} is rate limiting the computer: wait a moment, then retry.`;
    case 'timeout':
      return `${capitalized(vendor)} did not answer in time. Retry?`;
    case 'unavailable':
      return `${capitalized(vendor)} is unavailable right now. Retry in a moment.`;
    case 'network':
      return `The computer could not reach ${vendor}: check its network, then retry.`;
    case 'bad_response':
      return `${capitalized(vendor)} gave an answer that could not be read. Retry?`;
    case 'bad_request':
      return `${capitalized(vendor)} refused the request: check the model set on the computer.`;
    case undefined:
      return error ? `The answer failed: ${error}.` : 'The answer failed.';
  }
}

/** A wait the service makes before asking the provider again. */
export function waitWords(reason: ProviderFailureReason, seconds: number): string {
  // Past the wait the next attempt is under way (it may take as long as the provider's timeout).
  const retrying = seconds > 0 ? `retrying in ${seconds} s` : 'retrying now';
  if (reason === 'rate_limited') return `Rate limited; ${retrying}`;
  if (reason === 'unavailable') return `The model provider is busy; ${retrying}`;
  if (reason === 'timeout' || reason === 'network') return `No answer from the model provider; ${retrying}`;
  return `The model provider failed; ${retrying}`;
}

export class TurnNotices {
  /** The wait being counted down, until the turn goes on or ends. */
  private waiting: { node: HTMLElement; timer: ReturnType<typeof setInterval> } | undefined;
  /** The client_message_ids whose failure is shown at their turn (the chat's own error answer then adds nothing). */
  private readonly shown = new Set<string>();

  constructor(private readonly deps: TurnNoticesDeps) {}

  /** `turn.retrying`: "Rate limited; retrying in N s", counted down at the turn. */
  retrying(event: RetryingEvent): void {
    this.settled();
    const due = Date.now() + event.retry_in_ms;
    const node = this.deps.messages.addNote('', 'info');
    node.classList.add('turn-waiting');
    node.setAttribute('role', 'status');
    const show = () => (node.textContent = waitWords(event.reason, Math.max(0, Math.ceil((due - Date.now()) / 1000))));
    show();
    this.waiting = { node, timer: setInterval(show, 1000) };
  }

  /** The turn went on (an answer came) or ended: the wait is over. */
  settled(): void {
    if (!this.waiting) return;
    clearInterval(this.waiting.timer);
    this.waiting.node.remove();
    this.waiting = undefined;
  }

  /** `turn.ended` `failed`: what to do, under the message that failed, with Retry on this page's own. */
  failed({ event, asked }: FailedTurn): void {
    this.settled();
    const own = asked?.own ? asked.message : undefined;
    if (own?.client_message_id) this.shown.add(own.client_message_id);
    this.show(failureWords(event.reason, event.provider, event.error), own && { text: own.content, context: own.context, attachments: own.attachments }, event.reason);
  }

  /**
   * The chat this page sent was answered with a failure: said at the turn, unless its `turn.ended` said it
   * already (a failure before its turn began has none).
   */
  chatFailed(clientMessageId: string, error: string, retry: RetryOf): void {
    if (this.shown.delete(clientMessageId)) return;
    this.settled();
    this.show(`The answer failed: ${error}`, retry, undefined);
  }

  private show(text: string, retry: RetryOf | undefined, reason: ProviderFailureReason | undefined): void {
    const actions = h('div', { class: 'turn-failure-actions' });
    if (retry) {
      const button = h('button', { type: 'button', class: 'button secondary turn-retry' }, 'Retry');
      button.addEventListener('click', () => {
        button.disabled = true;
        button.textContent = 'Sent again';
        this.deps.retry(retry);
      });
      actions.append(button);
    }
    // In the editor the key and the model are set right here.
    const act = this.deps.connection.action?.bind(this.deps.connection);
    if (act && (reason === 'auth' || reason === 'not_configured' || reason === undefined)) {
      actions.append(h('button', { type: 'button', class: 'button secondary', onclick: () => act('setApiKey') }, 'Set API Key'));
    }
    if (act && (reason === 'bad_request' || reason === 'not_configured' || reason === undefined)) {
      actions.append(h('button', { type: 'button', class: 'button secondary', onclick: () => act('selectModel') }, 'Select Model'));
    }
    const node = this.deps.messages.addNote('', 'error');
    node.classList.add('turn-failure');
    node.replaceChildren(h('div', { class: 'turn-failure-text' }, text));
    if (actions.childElementCount > 0) node.append(actions);
  }
}
