/**
 * The message box: Enter sends, Shift+Enter is a newline. Typing works offline too (the message waits in
 * the outbox). While the conversation runs, Stop is shown beside Send (a message sent then is queued).
 */
import { h, strokeIcon } from './dom';
import type { KeptStorage } from './kept-list';

/** Send's arrow and Stop's square, shown instead of the words on a narrow phone (media/chat.css). */
const ARROW_UP = 'M8 13V3M3.5 7.5 8 3l4.5 4.5';
const SQUARE = 'M4 4h8v8H4z';
const labelled = (path: string, label: string) => [strokeIcon(path, 16, 1.8), h('span', { class: 'button-label' }, label)];

/**
 * Offline, the message box says so and that a message still goes. A placeholder does not grow the box and
 * is cut at its edge: "sends later" showed as "sends lat" at 320 px (beside attach, camera and Send, the
 * box holds 128 px of text), so a narrow window gets the shorter words; the waiting bubbles say "waiting
 * to send". test/web/phone-small-things.test.ts measures both at 320, 360 and 390 px.
 */
const OFFLINE = 'Offline · sends later';
const OFFLINE_NARROW = 'Offline · queued';
/** The machine refused this page's credential: nothing typed will send until it is paired again (kept meanwhile). */
const UNPAIRED = 'Pair again to send';
const UNPAIRED_NARROW = 'Not paired';
const NARROW = '(max-width: 359px)';
/** What the box holds, kept in the machine's storage (the phone: localStorage) so a reload does not lose it. */
const BOX_KEY = 'remote-assistant.box';

export class Composer {
  readonly element: HTMLFormElement;
  readonly input: HTMLTextAreaElement;
  private readonly send: HTMLButtonElement;
  private readonly stop: HTMLButtonElement;
  private connected = false;
  private running = false;
  private refused = false;
  private readonly narrow = globalThis.matchMedia?.(NARROW);
  /** Whether a message without text may be sent (it carries attachments). */
  allowEmpty: () => boolean = () => false;

  constructor(
    onSend: (text: string) => void,
    onStop: () => void,
    /** Where the box's text is kept (the outbox's storage); without one (the editor's view), in the box only. */
    private readonly storage?: KeptStorage,
  ) {
    this.input = h('textarea', { class: 'composer-input', rows: 1, placeholder: 'Ask anything…', 'aria-label': 'Message', enterkeyhint: 'send' });
    // Typed or put back before a reload (or the phone's browser dropping the page), not sent: there again.
    this.input.value = storage?.getItem(BOX_KEY) ?? '';
    this.send = h('button', { type: 'submit', class: 'button primary send' }, ...labelled(ARROW_UP, 'Send'));
    this.stop = h('button', { type: 'button', class: 'button danger stop', hidden: true }, ...labelled(SQUARE, 'Stop'));
    this.element = h('form', { class: 'composer', 'aria-label': 'Send a message' }, this.input, this.send, this.stop);
    this.element.addEventListener('submit', (event) => {
      event.preventDefault();
      this.submit(onSend);
    });
    this.input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.submit(onSend);
      }
    });
    this.input.addEventListener('input', () => this.changed());
    this.stop.addEventListener('click', () => onStop());
    // Made narrower (a phone turned, the editor's side bar resized), the text takes more lines: the box grows with
    // them, at the next frame (sized in the observer's callback, the box would make the browser report a resize
    // loop: an error event). Its own growth is observed too: the next frame then finds nothing to change.
    new ResizeObserver(() => requestAnimationFrame(() => this.grow())).observe(this.input);
    // A phone turned, or a window resized, while offline.
    this.narrow?.addEventListener('change', () => this.update());
    this.update();
  }

  /** `refused`: the machine refused this page's credential (ConnectionStatus.refused): it is not paired. */
  setConnected(connected: boolean, refused = false): void {
    this.connected = connected;
    this.refused = !connected && refused;
    this.update();
  }

  setRunning(running: boolean): void {
    this.running = running;
    this.update();
  }

  /** Puts controls (attach, camera) before the message box. */
  addControls(...controls: HTMLElement[]): void {
    this.input.before(...controls);
  }

  /**
   * Shown inside the message box's area, on a line of their own above it (the attachment tray): outside
   * it, between the conversation and the box's top border, a chip read as part of the last message.
   */
  addAbove(...elements: HTMLElement[]): void {
    this.element.prepend(...elements);
  }

  focus(): void {
    this.input.focus({ preventScroll: true });
  }

  /** Text the page could not send, back in the box after what is typed there (a blank line between), to be sent again or not. */
  putBack(text: string): void {
    this.input.value = this.input.value.trim() ? `${this.input.value.trimEnd()}\n\n${text}` : text;
    this.changed();
  }

  private submit(onSend: (text: string) => void): void {
    const text = this.input.value.trim();
    if (!text && !this.allowEmpty()) return;
    this.input.value = '';
    this.changed();
    onSend(text);
  }

  /** The text changed: the box's height, Send, and what is kept for a reload follow. */
  private changed(): void {
    this.grow();
    this.showSend();
    this.storage?.setItem(BOX_KEY, this.input.value);
  }

  private grow(): void {
    const input = this.input;
    // Hidden (another computer's view is on screen), the box has no width: sized then, it would be 0 px and show at
    // its least height for a frame when shown again. Its height waits for the box to be seen (the observer).
    if (!input.clientWidth) return;
    input.style.height = 'auto';
    // The box is sized border-box: its height holds the borders too, else their 2 px of the text scroll out of sight.
    input.style.height = `${Math.min(input.scrollHeight + input.offsetHeight - input.clientHeight, 200)}px`;
  }

  private update(): void {
    const narrow = this.narrow?.matches === true;
    const placeholder = this.connected ? 'Ask anything…' : this.refused ? (narrow ? UNPAIRED_NARROW : UNPAIRED) : narrow ? OFFLINE_NARROW : OFFLINE;
    if (this.input.placeholder !== placeholder) this.input.placeholder = placeholder;
    this.stop.hidden = !this.running;
    this.stop.disabled = !this.connected;
    this.showSend();
  }

  /**
   * While the conversation runs and nothing is typed, Stop takes Send's place: on a narrow phone the
   * message box keeps its width. Typing brings Send back (the message is queued behind the turn).
   */
  private showSend(): void {
    this.send.hidden = this.running && this.input.value.trim() === '' && !this.allowEmpty();
  }
}
