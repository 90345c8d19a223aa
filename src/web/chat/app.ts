/**
 * The chat app: wires the views to a ServiceConnection. It knows nothing of where it runs; the entry
 * points (chat-webview.ts, chat-phone.ts) choose the connection and where to remember the open conversation.
 */
import type { CommandInput, EnvelopeOf, PermissionMode, ViewEvent } from '../../protocol';
import type { ConnectionStatus, ServiceConnection } from '../connection';
import { ErrorBanner } from './banner';
import { Composer } from './composer';
import { ConversationList } from './conversation-list';
import { h } from './dom';
import { Header } from './header';
import { MessageView, type StreamingReply, type ToolCard } from './message-view';
import { PermissionCards, type AnswerOutcome, type Decision } from './permission-cards';
import { RulesEditor } from './rules-editor';
import { sendCommand, type ResolvedEvent } from './supervision-wire';

/** The events of a running chat, drawn live. */
type ChatEvent = Extract<ViewEvent, { event: 'chat.delta' | 'tool.call' | 'tool.result' }>;
type ChatEventOf<E extends ChatEvent['event']> = Extract<ChatEvent, { event: E }>;

export interface ChatAppOptions {
  connection: ServiceConnection;
  root: HTMLElement;
  /** Remembers the conversation on screen (webview state, localStorage). */
  memory?: { load(): string | undefined; save(conversationId: string | undefined): void };
  /** Extra controls at the bottom of the conversation drawer (the phone's "Forget pairing"). */
  drawerFooter?: HTMLElement;
}

interface ActiveChat {
  id: string;
  conversationId: string | undefined;
  /** The view it was sent from: it is drawn live only while that view is on screen. */
  view: number;
  reply: StreamingReply | undefined;
  tools: ToolCard[];
}

const HISTORY_LIMIT = 200;

export class ChatApp {
  private readonly connection: ServiceConnection;
  private readonly header: Header;
  private readonly list: ConversationList;
  private readonly messages = new MessageView();
  private readonly permissions: PermissionCards;
  private readonly rules: RulesEditor;
  private readonly composer: Composer;
  private readonly banner: ErrorBanner;
  private readonly root: HTMLElement;
  private readonly memory: ChatAppOptions['memory'];
  private current: string | undefined;
  private view = 0;
  private active: ActiveChat | undefined;
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
    this.rules = new RulesEditor(this.connection);
    this.composer = new Composer(
      (text) => void this.send(text),
      () => void this.stop(),
    );
    this.banner = new ErrorBanner(this.connection);
    this.layout(options.drawerFooter);

    this.current = this.memory?.load();
    if (!this.current) this.messages.showEmpty('Start a conversation: type a message below.');
    this.connection.onEvent((event) => this.onEvent(event));
    this.connection.onState((state) => this.onState(state));
  }

  private layout(footer: HTMLElement | undefined): void {
    const drawer = h('aside', { class: 'drawer', id: 'ra-drawer' }, this.list.element, this.rules.element, footer);
    const scrim = h('div', { class: 'scrim', 'aria-hidden': 'true' });
    const main = h('main', { class: 'main' }, this.banner.element, this.messages.element, this.permissions.element, this.composer.element);
    this.root.classList.add('app');
    this.root.replaceChildren(this.header.element, h('div', { class: 'body' }, drawer, scrim, main));

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
    if (this.connected && !wasConnected) {
      // (Re)connected: catch up with whatever happened meanwhile.
      void this.refreshConfig();
      void this.refreshConversations();
      void this.refreshPending();
      void this.rules.refresh();
      if (this.current) void this.loadHistory(this.current);
    }
    if (!this.connected && wasConnected) this.permissions.markStale();
  }

  private onEvent(event: ViewEvent): void {
    switch (event.event) {
      case 'chat.delta':
        return this.onDelta(event);
      case 'tool.call':
        return this.onToolCall(event);
      case 'tool.result':
        return this.onToolResult(event);
      case 'permission.request':
        return this.permissions.show(event);
      case 'permission.resolved':
        return this.permissions.resolve(event as ResolvedEvent);
      case 'config.changed':
        if (event.fields.includes('permission_rules')) void this.rules.refresh();
        return void this.refreshConfig();
      case 'conversation.updated':
        // Continued elsewhere (phone, script, webhook) while on screen here: show it. Our own chat's
        // updates arrive while it runs and are drawn by the stream already.
        // The event carries the conversation's row: no need to list them again.
        if (this.current && event.conversation_id === this.current && !this.active) void this.loadHistory(this.current);
        this.list.upsert(event.conversation);
        if (event.conversation_id === this.current) this.header.setTitle(event.conversation.title);
        return;
      case 'editor.new_conversation':
        return this.newChat();
      case 'editor.show_request':
        if (event.conversation_id !== this.current) this.select(event.conversation_id);
        this.permissions.reveal(event.request_id);
        return;
    }
  }

  /** The running chat an event belongs to, when it is drawn on screen. */
  private liveChat(event: ChatEvent): ActiveChat | undefined {
    const chat = this.active;
    if (!chat || event.id !== chat.id) return undefined;
    if (!chat.conversationId) {
      chat.conversationId = event.conversation_id;
      if (chat.view === this.view && !this.current) this.setCurrent(chat.conversationId);
    }
    return chat.view === this.view ? chat : undefined;
  }

  private onDelta(event: ChatEventOf<'chat.delta'>): void {
    const chat = this.liveChat(event);
    if (!chat) return;
    chat.reply ??= this.messages.startReply();
    chat.reply.append(event.delta);
  }

  private onToolCall(event: ChatEventOf<'tool.call'>): void {
    const chat = this.liveChat(event);
    if (!chat) return;
    // Text streamed before a tool call is its own bubble; the final answer starts a new one.
    if (chat.reply) {
      chat.reply.finish(chat.reply.received);
      chat.reply = undefined;
    }
    chat.tools.push(this.messages.addTool(event.tool, event.arguments));
  }

  private onToolResult(event: ChatEventOf<'tool.result'>): void {
    const chat = this.liveChat(event);
    if (!chat) return;
    const card = chat.tools.find((c) => c.tool === event.tool && c.element.dataset.status === undefined);
    if (!card) return;
    card.setStatus(event.ok ? 'ok' : event.denied ? 'denied' : 'failed');
  }

  // ---- commands --------------------------------------------------------------------------

  private async call<C extends CommandInput>(frame: C): Promise<EnvelopeOf<C['type']> | undefined> {
    try {
      return await this.connection.request(frame);
    } catch {
      return undefined;
    }
  }

  private async send(text: string): Promise<void> {
    if (this.active) return;
    const chat: ActiveChat = { id: this.connection.newId(), conversationId: this.current, view: this.view, reply: undefined, tools: [] };
    this.active = chat;
    this.banner.hide();
    this.composer.setRunning(true);
    this.messages.addUser(text);
    if (!this.current) this.header.setTitle(text.length > 80 ? `${text.slice(0, 79)}…` : text);
    const frame = { type: 'chat', id: chat.id, message: text, stream: true, ...(chat.conversationId ? { conversation_id: chat.conversationId } : {}) } as const;
    let answer: EnvelopeOf<'chat'> | undefined;
    let lost = false;
    try {
      answer = await this.connection.request(frame);
    } catch {
      lost = true;
    }
    this.active = undefined;
    this.composer.setRunning(false);
    const onScreen = chat.view === this.view;

    if (answer?.status === 'ok') {
      const data = answer.data;
      const conversationId = data.conversation_id || chat.conversationId;
      if (onScreen) {
        if (!this.current && conversationId) this.setCurrent(conversationId);
        const reply = chat.reply ?? this.messages.startReply();
        reply.finish(data.response, data.cancelled === true);
      } else if (conversationId && conversationId === this.current) {
        void this.loadHistory(conversationId);
      }
      // The list already follows the turn through conversation.updated (it carries the row).
    } else if (answer) {
      chat.reply?.finish('');
      if (answer.code === 'server_error') this.banner.show(answer.error ?? 'unknown error');
      else if (onScreen) this.messages.addNote(answer.error ?? 'The service refused the message.', 'error');
      if (answer.code === 'not_found' && onScreen) this.newChat();
    } else if (lost && onScreen) {
      chat.reply?.finish(chat.reply.received, true);
      this.messages.addNote('The connection was lost before the reply arrived. It may still finish: it will be shown when the conversation is reloaded.', 'error');
    }
    if (onScreen) this.composer.focus();
  }

  private async stop(): Promise<void> {
    const chat = this.active;
    if (!chat) return;
    await this.call({ type: 'cancel', id: chat.id });
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
    if (this.current) this.header.setTitle(this.list.title(this.current) ?? 'Conversation');
  }

  private async loadHistory(conversationId: string): Promise<void> {
    const view = this.view;
    const answer = await this.call({ type: 'get_messages', conversation_id: conversationId, include_tools: true, limit: HISTORY_LIMIT });
    if (view !== this.view || this.current !== conversationId) return;
    if (answer?.status === 'ok') {
      this.messages.showHistory(answer.data.messages);
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
    this.header.setTitle(conversationId ? this.list.title(conversationId) ?? this.headerTitleFallback() : 'New chat');
  }

  private headerTitleFallback(): string {
    return this.header.element.querySelector('.title')?.textContent ?? 'Conversation';
  }

  private select(conversationId: string): void {
    this.toggleDrawer(false);
    this.view += 1;
    this.setCurrent(conversationId);
    this.messages.showEmpty('Loading…');
    void this.loadHistory(conversationId);
  }

  private newChat(): void {
    this.toggleDrawer(false);
    this.view += 1;
    this.setCurrent(undefined);
    this.messages.showEmpty('Start a conversation: type a message below.');
    this.composer.focus();
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
