/**
 * What the page says at a turn when the model provider fails: while a failure that may pass is waited
 * out ("Rate limited; retrying in 4 s", `turn.retrying`), and when the turn failed for good: in words a
 * person can act on from where they are, under the message that failed, with Retry on the page's own.
 * (Before s24 a banner at the top said the provider's own text, and nothing said a retry was waited for.)
 */
import type { ContextItem, Message, ProviderFailureReason, UnansweredTurn, ViewEvent } from '../../protocol';
import { lastUnanswered } from '../../protocol/unanswered';
import type { ServiceConnection } from '../connection';
import { h } from './dom';
import type { FailedTurn } from './live-turn';
import type { MessageView } from './message-view';

type RetryingEvent = Extract<ViewEvent, { event: 'turn.retrying' }>;

/**
 * What Retry does: a stored message whose turn failed is answered again in place (`retry_turn`, under one
 * client_retry_id per failure, so a tap after a lost connection is a resend); a chat refused before its
 * message was stored is sent again as a new message.
 */
export type RetryOf =
  { kind: 'turn'; conversationId: string; messageId: string; clientRetryId: string } | { kind: 'resend'; text: string; context?: ContextItem[]; attachments?: Message['attachments'] };

/**
 * How a Retry went: sent (its turn's events follow), lost with the connection (Retry again: a resend),
 * interrupted (a resend answered so: a restart of the computer cut that retry short; Retry again is a new
 * retry), or refused (the service's words).
 */
export type RetryOutcome = { sent: true } | { lost: true } | { interrupted: true } | { refused: string };

export interface TurnNoticesDeps {
  messages: MessageView;
  connection: ServiceConnection;
  retry(message: RetryOf): Promise<RetryOutcome>;
  /** A new client_retry_id. */
  newId(): string;
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

/** A failure said at its turn: its node, and the ids it is known by (the message's id, its client_message_id). */
interface Notice {
  node: HTMLElement;
  keys: string[];
}

/** How a notice is drawn: a failure (red, with the editor's key and model buttons when they may help) or a stop (plain). */
interface NoticeHow {
  reason?: ProviderFailureReason;
  /** Offer the editor's Set API Key / Select Model (a failure, not a stop). */
  settings?: boolean;
  tone?: 'info' | 'error';
}

export class TurnNotices {
  /** The wait being counted down, until the turn goes on or ends. */
  private waiting: { node: HTMLElement; timer: ReturnType<typeof setInterval> } | undefined;
  /** The failures on screen, by their message's id and client_message_id: one notice per message, whichever said it first. */
  private readonly notices = new Map<string, Notice>();
  /** Messages this page sent or retried: a retried turn tells no user message, its failure offers Retry again. */
  private readonly own = new Set<string>();

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
    const { keys, retry } = this.retryOf({ event, ...(asked ? { asked } : {}) });
    this.show(keys, failureWords(event.reason, event.provider, event.error), retry, { reason: event.reason, settings: true });
  }

  /**
   * `turn.ended` `cancelled`: "Stopped" at the turn, with Retry on this page's own (the service answers a
   * stopped message again as a failed one). Under a stopped reply, which says "Stopped" itself, Retry alone.
   */
  stopped({ event, asked }: FailedTurn, replied: boolean): void {
    this.settled();
    const { keys, retry } = this.retryOf({ event, ...(asked ? { asked } : {}) });
    if (!retry && replied) return;
    if (!retry) return void this.deps.messages.addNote('Stopped');
    this.show(keys, replied ? '' : 'Stopped', retry, { tone: 'info' });
  }

  /**
   * The history drawn afresh (a reload, a switch) ends with a user message nothing answered, and no turn
   * runs there: its turn failed or was stopped (neither stores a reply). Said under it with Retry, as a
   * person reopening the page expects, in the words `turn.ended` had live: the service keeps why
   * (get_messages' `unanswered`); a message whose turn ended before it kept that (an older service) is
   * "not answered".
   */
  unanswered(conversationId: string, messages: readonly Message[], why: UnansweredTurn | undefined): void {
    const message = lastUnanswered(messages);
    if (!message || this.notices.get(message.id)?.node.isConnected) return;
    this.own.add(message.id);
    const retry: RetryOf = { kind: 'turn', conversationId, messageId: message.id, clientRetryId: this.deps.newId() };
    const keys = [message.id, ...(message.client_message_id ? [message.client_message_id] : [])];
    if (why?.message_id !== message.id) return this.show(keys, 'This message was not answered.', retry, { tone: 'info' });
    if (why.outcome === 'cancelled') return this.show(keys, 'Stopped', retry, { tone: 'info' });
    this.show(keys, failureWords(why.reason, why.provider, why.error), retry, { ...(why.reason ? { reason: why.reason } : {}), settings: true });
  }

  /** The ids a turn's notice is known by, and its Retry when the message is this page's own. */
  private retryOf({ event, asked }: FailedTurn): { keys: string[]; retry: RetryOf | undefined } {
    const messageId = event.message_id ?? asked?.message.id;
    if (asked?.own && messageId) this.own.add(messageId);
    const own = messageId !== undefined && this.own.has(messageId);
    const retry: RetryOf | undefined = own ? { kind: 'turn', conversationId: event.conversation_id, messageId, clientRetryId: this.deps.newId() } : undefined;
    return { keys: [messageId, asked?.message.client_message_id].filter((key): key is string => key !== undefined), retry };
  }

  /**
   * The chat this page sent was answered with a failure: said at the turn, unless its `turn.ended` said it
   * already (a failure before its turn began has none). `messageId`: its stored message, when the page saw
   * it stored (Retry then answers it again; else it is sent again).
   */
  chatFailed(conversationId: string | undefined, clientMessageId: string, messageId: string | undefined, error: string, resend: Extract<RetryOf, { kind: 'resend' }>): void {
    const said = (key: string | undefined) => key !== undefined && this.notices.get(key)?.node.isConnected === true;
    if (said(clientMessageId) || said(messageId)) return;
    this.settled();
    if (messageId) this.own.add(messageId);
    const retry: RetryOf = messageId && conversationId ? { kind: 'turn', conversationId, messageId, clientRetryId: this.deps.newId() } : resend;
    this.show([clientMessageId, ...(messageId ? [messageId] : [])], `The answer failed: ${error}`, retry, { settings: true });
  }

  /** A turn of this message ended otherwise (answered, stopped: a retry from anywhere): its failure is no longer the news. */
  resolved(messageId: string): void {
    const notice = this.notices.get(messageId);
    if (notice) this.drop(notice);
  }

  /** The conversation left the screen: its notices went with it. */
  clear(): void {
    this.settled();
    this.notices.clear();
  }

  private drop(notice: Notice): void {
    notice.node.remove();
    for (const key of notice.keys) if (this.notices.get(key) === notice) this.notices.delete(key);
  }

  private show(keys: string[], text: string, retry: RetryOf | undefined, how: NoticeHow): void {
    const reason = how.reason;
    // One notice per message: a second account of the same failure (the chat's error answer and its
    // turn.ended, in either order) words the one on screen.
    // (A notice the history's redraw took off the screen is not reworded: a new one is drawn.)
    const shown = keys.map((key) => this.notices.get(key)).find((notice) => notice?.node.isConnected);
    const node = shown?.node ?? this.deps.messages.addNote('', how.tone ?? 'error');
    const notice: Notice = { node, keys: [...new Set([...(shown?.keys ?? []), ...keys])] };
    for (const key of notice.keys) this.notices.set(key, notice);
    node.classList.add('turn-failure');
    node.replaceChildren(...(text ? [h('div', { class: 'turn-failure-text' }, text)] : []));
    const actions = h('div', { class: 'turn-failure-actions' });
    if (retry) {
      const button = h('button', { type: 'button', class: 'button secondary turn-retry' }, 'Retry');
      button.addEventListener('click', () => void this.retry(notice, retry, text, how));
      actions.append(button);
    }
    // In the editor the key and the model are set right here.
    const act = this.deps.connection.action?.bind(this.deps.connection);
    if (act && how.settings && (reason === 'auth' || reason === 'not_configured' || reason === undefined)) {
      actions.append(h('button', { type: 'button', class: 'button secondary', onclick: () => act('setApiKey') }, 'Set API Key'));
    }
    if (act && how.settings && (reason === 'bad_request' || reason === 'not_configured' || reason === undefined)) {
      actions.append(h('button', { type: 'button', class: 'button secondary', onclick: () => act('selectModel') }, 'Select Model'));
    }
    if (actions.childElementCount > 0) node.append(actions);
  }

  /** Retry tapped: the notice goes (the turn's answer comes where it stood); lost with the connection it comes back, its Retry a resend. */
  private async retry(notice: Notice, retry: RetryOf, text: string, how: NoticeHow): Promise<void> {
    this.drop(notice);
    if (retry.kind === 'turn') this.own.add(retry.messageId);
    const outcome = await this.deps.retry(retry);
    // Lost: unless the retry's own failure (its turn.ended, with a new id) was drawn meanwhile, which
    // stands: put back with this id, the next tap would be a resend answered with the old failure and
    // nothing asked (review25b).
    if ('lost' in outcome && !notice.keys.some((key) => this.notices.get(key)?.node.isConnected)) this.show(notice.keys, text, retry, how);
    else if ('interrupted' in outcome && retry.kind === 'turn') {
      // Its tools may have run before the restart (their cards say so): asking again is the person's choice.
      this.show(notice.keys, 'The computer restarted before this was answered.', { ...retry, clientRetryId: this.deps.newId() }, { tone: 'info' });
    } else if ('refused' in outcome) this.deps.messages.addNote(`Could not retry: ${outcome.refused}`, 'error');
  }
}
