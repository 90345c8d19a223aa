/**
 * The chat app: wires the views to a ServiceConnection. It knows nothing of where it runs; the entry
 * points (chat-webview.ts, chat-phone.ts) choose the connection and where to remember the open conversation.
 */
import type { CommandInput, EnvelopeOf, PermissionMode, ViewEvent } from '../../protocol';
import { contextChars, MAX_CONTEXT_CHARS } from '../../protocol/chat-context';
import type { ConnectionStatus, ServiceConnection } from '../connection';
import { ErrorBanner, UpdateBanner } from './banner';
import { Composer } from './composer';
import { ContextChips } from './context-chips';
import { FileMentions } from './file-mentions';
import { ConversationList } from './conversation-list';
import { h } from './dom';
import { Header } from './header';
import { attachUsage } from './usage-view';
import { MessageView, type StreamingReply, type ToolCard } from './message-view';
import { Outbox, type OutboxItem, type OutboxStorage } from './outbox';
import { QueueView } from './queue-view';
import { PermissionCards, type AnswerOutcome, type Decision } from './permission-cards';
import { RulesEditor } from './rules-editor';
import { SEARCH_LIMIT, SearchView } from './search-view';
import { ExportView } from './export-view';
import { sendCommand, type ResolvedEvent } from './supervision-wire';
import { UndoView } from './undo-view';
import { AttachmentThumbnails, AttachmentTray } from './attachments';

/** The events of a conversation's turn, drawn live for the conversation on screen whoever started it. */
type TurnEvent = Extract<ViewEvent, { event: 'chat.message' | 'chat.delta' | 'tool.call' | 'tool.result' | 'turn.ended' }>;
type TurnEventOf<E extends TurnEvent['event']> = Extract<TurnEvent, { event: E }>;
type ConversationRow = Extract<ViewEvent, { event: 'conversation.updated' }>['conversation'];

export interface ChatAppOptions {
  connection: ServiceConnection;
  root: HTMLElement;
  /** Remembers the conversation on screen (webview state, localStorage). */
  memory?: { load(): string | undefined; save(conversationId: string | undefined): void };
  /** Where the outbox of unsent messages lives (the phone: localStorage); default: memory only. */
  outboxStorage?: OutboxStorage;
  /** Extra controls at the bottom of the conversation drawer (the phone's "Remove this computer"). */
  drawerFooter?: HTMLElement;
  /** Shown in the top bar after the drawer toggle (the phone's machine switcher). */
  headerExtra?: HTMLElement;
}

/** The running turn of the conversation on screen, as its events draw it. */
interface LiveTurn {
  reply: StreamingReply | undefined;
  tools: ToolCard[];
  /** Everything it put on screen, so a reload of the history can keep what is not stored yet. */
  nodes: HTMLElement[];
}

/** An outbox message sent and not yet answered. */
interface InFlight {
  item: OutboxItem;
  requestId: string;
}

const HISTORY_LIMIT = 200;
/** Opening a search hit loads as much of the history as get_messages gives, to reach an older message. */
const HISTORY_LIMIT_TO_REVEAL = 500;

export class ChatApp {
  private readonly connection: ServiceConnection;
  private readonly header: Header;
  private readonly list: ConversationList;
  private readonly messages = new MessageView();
  private readonly permissions: PermissionCards;
  private readonly rules: RulesEditor;
  private readonly composer: Composer;
  /** The chat input's chips: the `context` of the next message (the editor's view only). */
  private readonly chips = new ContextChips();
  private readonly mentions: FileMentions | undefined;
  private readonly search: SearchView;
  private readonly exporter: ExportView;
  /** A message to show once its conversation's history is on screen (a search hit chosen). */
  private target: { conversationId: string; messageId: string } | undefined;
  private readonly banner: ErrorBanner;
  private readonly updateBanner = new UpdateBanner();
  private readonly queue: QueueView;
  private readonly outbox: Outbox;
  private readonly undo: UndoView;
  private readonly thumbnails: AttachmentThumbnails;
  private readonly tray: AttachmentTray;
  /** The bubbles of outbox messages on screen ("waiting to send"), by client_message_id. */
  private readonly pendingBubbles = new Map<string, HTMLElement>();
  /** Outbox messages sent and not yet answered, in the order sent. */
  private readonly inFlight: InFlight[] = [];
  /** The last `seq` seen per followed conversation: after a reconnect, follow again from there. */
  private readonly lastSeq = new Map<string, number>();
  /** Ids of the stored messages on screen: a replayed chat.message is drawn once. */
  private readonly shownIds = new Set<string>();
  private turn: LiveTurn | undefined;
  /** The new chat on screen (its messages share this draft until the service names the conversation). */
  private draft = newClientId();
  private readonly root: HTMLElement;
  private readonly memory: ChatAppOptions['memory'];
  private current: string | undefined;
  private view = 0;
  private connected = false;

  constructor(options: ChatAppOptions) {
    this.connection = options.connection;
    this.root = options.root;
    this.memory = options.memory;
    this.header = new Header((mode, previous) => void this.changeMode(mode, previous));
    this.list = new ConversationList({
      select: (id) => this.select(id),
      create: () => this.newChat(),
      remove: (id) => this.remove(id),
    });
    const action = this.connection.action?.bind(this.connection);
    this.permissions = new PermissionCards({
      answer: (requestId, decision, note) => this.answerPermission(requestId, decision, note),
      conversationTitle: (conversationId) => this.list.title(conversationId),
      // In the editor, the change opens in VS Code's own diff editor (protocol/bridge.ts, `showDiff`).
      showDiff: action ? (requestId) => action('showDiff', requestId) : undefined,
    });
    this.permissions.onChange(() => this.header.setWaiting(this.permissions.count));
    this.header.onWaitingClick(() => this.permissions.revealFirst());
    this.header.usage.compact.addEventListener('click', () => void this.compactNow());
    this.rules = new RulesEditor(this.connection);
    this.search = new SearchView({
      search: (query) => this.call({ type: 'search_messages', query, limit: SEARCH_LIMIT }),
      open: (hit) => this.openAt(hit.conversation_id, hit.message_id),
    });
    this.exporter = new ExportView({ connection: this.connection, current: () => this.current, report: (text, kind) => this.messages.addNote(text, kind) });
    this.composer = new Composer(
      (text) => this.send(text),
      () => void this.stop(),
    );
    const lookup = this.connection.lookup?.bind(this.connection);
    this.mentions = lookup
      ? new FileMentions({ input: this.composer.input, keyTarget: this.composer.element, lookup, pick: (item) => this.chips.add(item), error: (message) => this.messages.addNote(message, 'error') })
      : undefined;
    this.outbox = new Outbox(options.outboxStorage);
    this.undo = new UndoView({ call: (frame) => this.call(frame), list: this.messages.element, showThreeWay: action ? (argument) => action('showUndoThreeWay', argument) : undefined });
    this.thumbnails = new AttachmentThumbnails(this.connection);
    this.tray = new AttachmentTray(this.connection, this.thumbnails);
    this.composer.addControls(...this.tray.controls);
    this.composer.allowEmpty = () => this.tray.count > 0;
    this.messages.onStoredMessage = (node, message) => this.thumbnails.show(node, message.attachments);
    this.queue = new QueueView((clientMessageId) => void this.removeQueued(clientMessageId));
    this.banner = new ErrorBanner(this.connection);
    this.layout(options.drawerFooter);
    if (options.headerExtra) this.header.drawerToggle.after(options.headerExtra);

    this.current = this.memory?.load();
    this.exporter.setConversation(this.current);
    // A new chat typed into before a reload is still on screen, with its waiting messages.
    if (!this.current) this.draft = this.outbox.all.find((item) => !item.conversation_id && item.draft)?.draft ?? this.draft;
    if (!this.current) this.messages.showEmpty('Start a conversation: type a message below.');
    this.showPendingBubbles();
    this.connection.onEvent((event) => this.onEvent(event));
    this.connection.onState((state) => this.onState(state));
  }

  private layout(footer: HTMLElement | undefined): void {
    const drawer = h('aside', { class: 'drawer', id: 'ra-drawer' }, this.search.element, this.list.element, this.rules.element, footer);
    this.header.element.querySelector('.title')?.after(this.exporter.element);
    const scrim = h('div', { class: 'scrim', 'aria-hidden': 'true' });
    const main = h('main', { class: 'main' }, this.updateBanner.element, this.banner.element, this.messages.element, this.permissions.element, this.queue.element, this.mentions?.element, this.chips.element, this.tray.element, this.composer.element);
    this.root.classList.add('app');
    this.root.replaceChildren(this.header.element, h('div', { class: 'body' }, drawer, scrim, main));
    this.tray.watch(main);

    this.header.drawerToggle.addEventListener('click', () => this.toggleDrawer());
    scrim.addEventListener('click', () => this.toggleDrawer(false));
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.root.classList.contains('drawer-open')) {
        this.toggleDrawer(false);
        this.header.drawerToggle.focus();
      }
    });
    // Links in replies: through the editor when there is one, else a new tab (target=_blank).
    this.messages.element.addEventListener('click', (event) => {
      const link = (event.target as Element | null)?.closest?.('a[href]');
      if (!link || !this.connection.action) return;
      event.preventDefault();
      this.connection.action('openLink', link.getAttribute('href') ?? '');
    });
  }

  /** Opens a conversation at one of its messages (a search hit), marking the message for a moment. */
  openAt(conversationId: string, messageId: string): void {
    this.target = { conversationId, messageId };
    if (conversationId !== this.current) return this.select(conversationId);
    this.toggleDrawer(false);
    if (this.messages.reveal(messageId)) this.target = undefined;
    else void this.loadHistory(conversationId);
  }

  /** Shows a conversation chosen outside the app (a notification's link: push/deep-link.ts). */
  openConversation(conversationId: string): void {
    if (conversationId !== this.current) this.select(conversationId);
  }

  private toggleDrawer(open = !this.root.classList.contains('drawer-open')): void {
    this.root.classList.toggle('drawer-open', open);
    this.header.drawerToggle.setAttribute('aria-expanded', String(open));
    if (open) this.list.element.querySelector<HTMLElement>('[aria-current="true"], .new-chat')?.focus();
  }

  // ---- connection and events -------------------------------------------------------------

  private onState(state: ConnectionStatus): void {
    const wasConnected = this.connected;
    this.connected = state.state === 'open';
    this.header.setState(state);
    this.composer.setConnected(this.connected);
    // Offline, the outbox's bubbles say "waiting to send" (media/chat.css).
    this.root.classList.toggle('offline', !this.connected);
    if (this.connected) this.updateBanner.show(state.update);
    if (this.connected && !wasConnected) {
      // (Re)connected: catch up with whatever happened meanwhile, then send what waited in the outbox.
      void this.refreshConfig();
      void this.refreshConversations();
      void this.refreshPending();
      void this.rules.refresh();
      void this.follow(this.current).then(() => this.flush());
    }
    if (!this.connected && wasConnected) this.permissions.markStale();
  }

  private onEvent(event: ViewEvent): void {
    switch (event.event) {
      case 'chat.message':
      case 'chat.delta':
      case 'tool.call':
      case 'tool.result':
      case 'turn.ended':
        return this.onTurnEvent(event);
      case 'permission.request':
        return this.permissions.show(event);
      case 'permission.resolved':
        return this.permissions.resolve(event as ResolvedEvent);
      case 'config.changed':
        if (event.fields.includes('permission_rules')) void this.rules.refresh();
        return void this.refreshConfig();
      case 'conversation.updated':
        // The event carries the conversation's row: no need to list them again. Its messages arrive
        // through following (chat.message), whoever sent them.
        this.list.upsert(event.conversation);
        if (event.conversation_id === this.current) this.showRow(event.conversation);
        return;
      case 'editor.new_conversation':
        return this.newChat();
      case 'editor.add_context':
        this.chips.add(event.item);
        this.composer.focus();
        return;
      case 'editor.active_file':
        return this.chips.setActive(event.item, event.attach);
      case 'editor.show_message':
        return this.openAt(event.conversation_id, event.message_id);
      case 'editor.show_request':
        if (event.conversation_id !== this.current) this.select(event.conversation_id);
        this.permissions.reveal(event.request_id);
        return;
    }
  }

  /** The conversation's running state and queue, shown under the messages. */
  private showRow(row: ConversationRow): void {
    this.header.setTitle(row.title);
    this.header.usage.show(row.usage);
    this.composer.setRunning(row.state !== 'idle');
    this.queue.show(row.queued);
  }

  private onTurnEvent(event: TurnEvent): void {
    const conversationId = event.conversation_id;
    // A follower never draws one event twice: the catch-up after a reconnect starts after the last seen.
    if (event.seq !== undefined) {
      if (event.seq <= (this.lastSeq.get(conversationId) ?? -1)) return;
      this.lastSeq.set(conversationId, event.seq);
    }
    // Our new chat's first event names its conversation (before it, we follow no other conversation).
    const sending = this.inFlight.find((s) => !s.item.conversation_id && isOurs(event, s));
    if (sending) {
      sending.item.conversation_id = conversationId;
      if (sending.item.draft) this.outbox.conversationMade(sending.item.draft, conversationId);
      // The new chat's next messages may go now, to the conversation it made.
      this.flush();
      if (!this.current && sending.item.draft === this.draft) {
        this.setCurrent(conversationId);
        // Its row (running) may have come before this event named the conversation.
        const row = this.list.row(conversationId);
        if (row) this.showRow(row);
      }
    }
    if (conversationId !== this.current) return;
    switch (event.event) {
      case 'chat.message':
        return this.onMessage(event);
      case 'chat.delta':
        return this.onDelta(event);
      case 'tool.call':
        return this.onToolCall(event);
      case 'tool.result':
        return this.onToolResult(event);
      case 'turn.ended':
        return this.endTurn(event.outcome === 'cancelled');
    }
  }

  private liveTurn(): LiveTurn {
    this.turn ??= { reply: undefined, tools: [], nodes: [] };
    return this.turn;
  }

  private onMessage(event: TurnEventOf<'chat.message'>): void {
    const message = event.message;
    if (this.shownIds.has(message.id)) return;
    this.shownIds.add(message.id);
    if (message.role === 'summary') {
      // Made during a turn (before a step) or on demand (compact_conversation, no turn): never starts one.
      const node = this.messages.addSummary(message);
      this.turn?.nodes.push(node);
      return;
    }
    const turn = this.liveTurn();
    if (message.role === 'user') {
      // Our own message (ours by request id, or by text after a resend) is already on screen: mark it sent.
      const bubble = this.claimPendingBubble(message.content);
      const node = bubble ?? this.messages.addUser(message.content, false, message.context);
      this.thumbnails.show(node, message.attachments);
      node.dataset.messageId = message.id;
      turn.nodes.push(node);
      return;
    }
    if (message.role !== 'assistant') return;
    const reply = turn.reply ?? this.messages.startReply();
    if (!turn.reply) turn.nodes.push(reply.element);
    turn.reply = undefined;
    reply.finish(message.content);
    reply.element.dataset.messageId = message.id;
    attachUsage(reply.element, message.usage);
  }

  private onDelta(event: TurnEventOf<'chat.delta'>): void {
    const turn = this.liveTurn();
    if (!turn.reply) {
      turn.reply = this.messages.startReply();
      turn.nodes.push(turn.reply.element);
    }
    turn.reply.append(event.delta);
  }

  private onToolCall(event: TurnEventOf<'tool.call'>): void {
    const turn = this.liveTurn();
    // Text streamed before a tool call is its own bubble; the final answer starts a new one.
    if (turn.reply) {
      turn.reply.finish(turn.reply.received);
      turn.reply = undefined;
    }
    // A call the history already shows (the catch-up after opening a running conversation re-sends its
    // turn's events): the same card, running again if the history had no result for it yet.
    const shown = this.messages.toolCard(event.call_id);
    if (shown) {
      if (shown.unresolved) shown.setStatus('running');
      turn.tools.push(shown);
      return;
    }
    const card = this.messages.addTool(event.tool, event.arguments, event.call_id);
    turn.tools.push(card);
    turn.nodes.push(card.element);
  }

  private onToolResult(event: TurnEventOf<'tool.result'>): void {
    const byId = event.call_id === undefined ? undefined : this.turn?.tools.find((c) => c.callId === event.call_id);
    // Its result is on screen already (the history showed it; the catch-up re-sent it): nothing to add.
    if (byId && byId.element.dataset.status !== undefined) return;
    const card = byId ?? this.turn?.tools.find((c) => c.tool === event.tool && c.element.dataset.status === undefined);
    card?.setStatus(event.ok ? 'ok' : event.denied ? 'denied' : 'failed');
    // An image the agent read is shown with its tool.
    if (card) this.thumbnails.show(card.element, event.attachments);
  }

  private endTurn(cancelled: boolean): void {
    const reply = this.turn?.reply;
    if (reply) reply.finish(reply.received, cancelled);
    else if (cancelled) this.messages.addNote('Stopped');
    this.turn = undefined;
    // The turn's reply may offer "Undo this turn" now that its files are written.
    if (this.current) void this.undo.refresh(this.current);
  }

  /**
   * Follows the conversation on screen: after a reconnect from the last `seq` seen (the service sends
   * exactly what was missed); afresh (or after a `reset`) the history is loaded first and the running
   * turn's events so far follow.
   */
  private async follow(conversationId: string | undefined): Promise<void> {
    if (!conversationId) return;
    const view = this.view;
    const after = this.lastSeq.get(conversationId);
    if (after === undefined) await this.loadHistory(conversationId);
    const answer = await this.call({ type: 'follow_conversation', conversation_id: conversationId, ...(after !== undefined ? { after_seq: after } : {}) });
    if (answer?.status !== 'ok' || view !== this.view) return;
    if (answer.data.seq > (this.lastSeq.get(conversationId) ?? -1)) this.lastSeq.set(conversationId, answer.data.seq);
    if (answer.data.reset) await this.loadHistory(conversationId);
  }

  // ---- commands --------------------------------------------------------------------------

  private async call<C extends CommandInput>(frame: C): Promise<EnvelopeOf<C['type']> | undefined> {
    try {
      return await this.connection.request(frame);
    } catch {
      return undefined;
    }
  }

  /** A message with attachments waits for their uploads (those that failed are named), then goes the same way. */
  private send(text: string): void {
    if (this.tray.count === 0) return this.enqueue(text, []);
    void this.tray.take().then(({ attachments, failed }) => {
      if (failed.length > 0) this.messages.addNote(`Not attached: ${failed.join(', ')}`, 'error');
      if (text || attachments.length > 0) this.enqueue(text, attachments);
    });
  }

  /** A typed message goes to the outbox first: it is sent now if connected, else when the connection returns. */
  private enqueue(text: string, attachments: NonNullable<OutboxItem['attachments']>): void {
    this.banner.hide();
    // What the chips show is what is sent; too much is refused here, before the text leaves the input.
    const context = this.chips.items();
    const size = contextChars(context);
    if (size > MAX_CONTEXT_CHARS) {
      this.composer.input.value = text;
      this.messages.addNote(`The attached context holds ${size} characters; at most ${MAX_CONTEXT_CHARS} can be sent with one message. Remove a chip, or select less.`, 'error');
      return;
    }
    this.chips.clearAdded();
    const item: OutboxItem = { client_message_id: newClientId(), text, ...(context.length > 0 ? { context } : {}), ...(attachments.length > 0 ? { attachments } : {}), ...(this.current ? { conversation_id: this.current } : { draft: this.draft }) };
    this.outbox.add(item);
    if (!this.current) this.header.setTitle(text.length > 80 ? `${text.slice(0, 79)}…` : text);
    this.pendingBubbles.set(item.client_message_id, this.addPendingBubble(item));
    // Stop at once; the conversation's row then says whether it runs (conversation.updated).
    if (this.connected) this.composer.setRunning(true);
    this.flush();
  }

  /**
   * Sends, in order, every outbox message not on its way yet, without waiting for earlier answers: the
   * service queues a conversation's messages behind its running turn, where every client sees them and
   * may remove one. Only a new chat's next messages wait, until its first one names the conversation.
   * Offline nothing is sent; the outbox is sent again (same ids, answered once) when the connection returns.
   */
  private flush(): void {
    if (!this.connected) return;
    const onItsWay = (id: string) => this.inFlight.some((s) => s.item.client_message_id === id);
    for (const item of this.outbox.ready(onItsWay)) void this.sendItem(item).then(() => this.flush());
  }

  /** True when the service answered (the message is out of the outbox), false when the connection dropped. */
  private async sendItem(item: OutboxItem): Promise<boolean> {
    const sending: InFlight = { item, requestId: this.connection.newId() };
    this.inFlight.push(sending);
    this.outbox.markAttempted(item);
    const frame = { type: 'chat', id: sending.requestId, message: item.text, stream: true, client_message_id: item.client_message_id,
      ...(item.context ? { context: item.context } : {}),
      ...(item.attachments?.length ? { attachments: item.attachments.map((a) => a.attachment_id) } : {}),
      ...(item.conversation_id ? { conversation_id: item.conversation_id } : {}) } as const;
    let answer: EnvelopeOf<'chat'> | undefined;
    try {
      answer = await this.connection.request(frame);
    } catch {
      return false; // Kept: sent again with the same client_message_id once reconnected, answered once.
    } finally {
      this.inFlight.splice(this.inFlight.indexOf(sending), 1);
    }
    this.outbox.remove(item.client_message_id);
    const bubble = this.pendingBubbles.get(item.client_message_id);
    this.pendingBubbles.delete(item.client_message_id);
    // Cancelled before any client saw it stored: taken out of the queue (remove_queued), never stored.
    if (bubble && answer.status === 'ok' && answer.data.cancelled) bubble.remove();
    else if (bubble) markSent(bubble);
    const onScreen = (item.conversation_id ?? (answer.status === 'ok' ? answer.data.conversation_id : undefined)) === this.current || (!this.current && item.draft === this.draft);
    if (answer.status === 'ok') {
      const conversationId = answer.data.conversation_id;
      if (!item.conversation_id && item.draft) this.outbox.conversationMade(item.draft, conversationId);
      if (!this.current && item.draft === this.draft) this.setCurrent(conversationId);
      // The reply itself is drawn from the conversation's events (we follow it), turn.ended included.
    } else {
      this.turn?.reply?.finish('');
      if (answer.code === 'server_error') this.banner.show(answer.error ?? 'unknown error');
      else if (onScreen) this.messages.addNote(answer.error ?? 'The service refused the message.', 'error');
      if (answer.code === 'not_found' && onScreen) this.newChat();
    }
    if (onScreen) this.composer.focus();
    return true;
  }

  private addPendingBubble(item: OutboxItem): HTMLElement {
    const bubble = this.messages.addUser(item.text, true, item.context);
    this.thumbnails.show(bubble, item.attachments);
    bubble.dataset.clientMessageId = item.client_message_id;
    bubble.dataset.text = item.text;
    bubble.append(h('div', { class: 'message-note pending-note' }, 'waiting to send'));
    return bubble;
  }

  /**
   * The outbox's messages of the conversation on screen, after its history. One sent before (e.g. before
   * a reload) whose text the history holds was stored: it waits only for its answer, and is not drawn twice.
   */
  private showPendingBubbles(storedUserTexts: ReadonlySet<string> = new Set()): void {
    this.pendingBubbles.clear();
    for (const item of this.outbox.all) {
      const here = item.conversation_id ? item.conversation_id === this.current : !this.current && item.draft === this.draft;
      if (here && !(item.attempted && storedUserTexts.has(item.text))) this.pendingBubbles.set(item.client_message_id, this.addPendingBubble(item));
    }
  }

  /** The bubble of the outbox message a stored user message is: the first in flight with its text, else the first on screen. */
  private claimPendingBubble(text: string): HTMLElement | undefined {
    const sending = this.inFlight.find((s) => s.item.text === text);
    const id = sending ? sending.item.client_message_id : [...this.pendingBubbles.entries()].find(([, b]) => b.dataset.text === text)?.[0];
    const bubble = id ? this.pendingBubbles.get(id) : undefined;
    if (!bubble || !id) return undefined;
    this.pendingBubbles.delete(id);
    markSent(bubble);
    return bubble;
  }

  /** Stop: ends the conversation's running turn, whoever started it. */
  /** The Compact button: the summary arrives as a chat.message (we follow the conversation); the meter is refreshed. */
  private async compactNow(): Promise<void> {
    const conversationId = this.current;
    if (!conversationId) return;
    const button = this.header.usage.compact;
    button.disabled = true;
    try {
      const answer = await this.call({ type: 'compact_conversation', conversation_id: conversationId });
      if (answer?.status !== 'ok') this.messages.addNote(`Could not compact: ${answer?.error ?? 'not connected'}`, 'error');
      else await this.refreshConversations();
    } finally {
      button.disabled = false;
    }
  }

  private async stop(): Promise<void> {
    if (!this.current) return;
    await this.call({ type: 'cancel', conversation_id: this.current });
  }

  private async removeQueued(clientMessageId: string): Promise<void> {
    if (!this.current) return;
    const answer = await this.call({ type: 'remove_queued', conversation_id: this.current, client_message_id: clientMessageId });
    if (answer?.status !== 'ok') this.messages.addNote(`Could not remove the queued message: ${answer?.error ?? 'not connected'}`, 'error');
    // Not removed: it started meanwhile, or it is another person's (only its sender and the owner may).
    else if (!answer.data.removed) this.messages.addNote('The message was not removed: it has started, or it was sent by someone else.');
  }

  private async answerPermission(requestId: string, decision: Decision, note: string | undefined): Promise<AnswerOutcome> {
    const answer = await sendCommand(this.connection, { type: 'permission_response', request_id: requestId, decision, ...(note ? { note } : {}) });
    if (!answer) return { ok: false, error: 'Not connected.' };
    if (answer.status === 'ok') return { ok: true, answer: answer.data };
    return { ok: false, error: answer.error || 'The answer was refused.', code: answer.code };
  }

  /**
   * The requests waiting for this client (after a reconnect, those that waited meanwhile). The service
   * also re-sends each as an event when the session opens: the cards keep one per request.
   */
  private async refreshPending(): Promise<void> {
    const answer = await sendCommand(this.connection, { type: 'list_pending_permissions' });
    if (!answer) return;
    this.permissions.reconcile(answer.status === 'ok' ? answer.data.requests : undefined);
  }

  private async changeMode(mode: PermissionMode, previous: PermissionMode | undefined): Promise<void> {
    const answer = await this.call({ type: 'update_config', config: { permission_mode: mode } });
    if (answer?.status === 'ok') return;
    if (previous) this.header.setMode(previous, this.connected);
    this.messages.addNote(`Could not change the permission mode: ${answer?.error ?? 'not connected'}`, 'error');
  }

  private async refreshConfig(): Promise<void> {
    const answer = await this.call({ type: 'get_config' });
    if (answer?.status === 'ok') this.header.setMode(answer.data.permission_mode, this.connected);
  }

  private async refreshConversations(): Promise<void> {
    const answer = await this.call({ type: 'list_conversations', limit: 100 });
    if (answer?.status !== 'ok') return;
    this.list.setConversations(answer.data.conversations);
    this.list.setCurrent(this.current);
    const row = answer.data.conversations.find((c) => c.id === this.current);
    if (row) this.showRow(row);
    else if (this.current) this.header.setTitle(this.list.title(this.current) ?? 'Conversation');
  }

  private async loadHistory(conversationId: string): Promise<void> {
    const view = this.view;
    const target = this.target?.conversationId === conversationId ? this.target : undefined;
    const limit = target ? HISTORY_LIMIT_TO_REVEAL : HISTORY_LIMIT;
    const answer = await this.call({ type: 'get_messages', conversation_id: conversationId, include_tools: true, limit });
    if (view !== this.view || this.current !== conversationId) return;
    if (answer?.status === 'ok') {
      this.messages.showHistory(answer.data.messages);
      if (target) {
        this.target = undefined;
        if (!this.messages.reveal(target.messageId)) this.messages.addNote(`That message is older than the last ${limit} shown here.`);
      }
      void this.undo.refresh(conversationId);
      this.shownIds.clear();
      for (const message of answer.data.messages) this.shownIds.add(message.id);
      // What the running turn drew that is not stored yet, and what waits to be sent, stay after it.
      const stored = (node: HTMLElement) => node.dataset.messageId !== undefined && this.shownIds.has(node.dataset.messageId);
      if (this.turn) this.turn.nodes = this.turn.nodes.filter((node) => !stored(node));
      for (const node of this.turn?.nodes ?? []) this.messages.append(node);
      this.showPendingBubbles(new Set(answer.data.messages.filter((m) => m.role === 'user').map((m) => m.content)));
    } else if (answer?.code === 'not_found') {
      this.newChat();
    } else if (answer) {
      this.messages.addNote(answer.error ?? 'Could not load the conversation.', 'error');
    }
  }

  private setCurrent(conversationId: string | undefined): void {
    this.current = conversationId;
    this.memory?.save(conversationId);
    this.list.setCurrent(conversationId);
    this.exporter.setConversation(conversationId);
    this.header.setTitle(conversationId ? this.list.title(conversationId) ?? this.headerTitleFallback() : 'New chat');
  }

  private headerTitleFallback(): string {
    return this.header.element.querySelector('.title')?.textContent ?? 'Conversation';
  }

  private select(conversationId: string): void {
    this.toggleDrawer(false);
    this.leave();
    this.setCurrent(conversationId);
    const row = this.list.row(conversationId);
    this.composer.setRunning(row !== undefined && row.state !== 'idle');
    this.header.usage.show(row?.usage);
    this.queue.show(row?.queued ?? []);
    this.messages.showEmpty('Loading…');
    void this.follow(conversationId);
  }

  private newChat(): void {
    this.toggleDrawer(false);
    this.leave();
    this.draft = newClientId();
    this.setCurrent(undefined);
    this.header.usage.show(null);
    this.composer.setRunning(false);
    this.queue.show([]);
    this.messages.showEmpty('Start a conversation: type a message below.');
    this.showPendingBubbles();
    this.composer.focus();
  }

  /** Stops following the conversation leaving the screen: its events are no longer drawn here. */
  private leave(): void {
    this.view += 1;
    const previous = this.current;
    this.turn = undefined;
    this.shownIds.clear();
    if (!previous) return;
    this.lastSeq.delete(previous);
    void this.call({ type: 'unfollow_conversation', conversation_id: previous });
  }

  private async remove(conversationId: string): Promise<void> {
    const answer = await this.call({ type: 'delete_conversation', conversation_id: conversationId });
    if (answer?.status === 'ok' || answer?.code === 'not_found') {
      if (this.current === conversationId) this.newChat();
      this.list.remove(conversationId);
    } else {
      this.messages.addNote(`Could not delete: ${answer?.error ?? 'not connected'}`, 'error');
    }
  }
}

/** A random id for an outbox message (crypto.randomUUID needs a secure context; a LAN page may not be one). */
function newClientId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function markSent(bubble: HTMLElement): void {
  bubble.classList.remove('pending');
  bubble.querySelector(':scope > .pending-note')?.remove();
}

/** Whether a turn event is the first of the new chat being sent (chat.message carries no request id: its text tells). */
function isOurs(event: TurnEvent, sending: InFlight): boolean {
  if (event.event === 'chat.message') return event.message.role === 'user' && event.message.content === sending.item.text;
  return 'id' in event && event.id === sending.requestId;
}
