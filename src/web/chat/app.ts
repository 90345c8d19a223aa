/**
 * The chat app: wires the views to a ServiceConnection. It knows nothing of where it runs; the entry
 * points (chat-webview.ts, chat-phone.ts) choose the connection and where to remember the open conversation.
 * Of its three jobs, the live turn (live-turn.ts) and the outbox's sending (outbox-sender.ts) live
 * apart; navigation (which conversation is on screen, following it, its history) is here.
 */
import { shortened } from '../../protocol/code-points';
import type { CommandInput, Conversation, EnvelopeOf, PermissionMode, ResultOf, ViewEvent } from '../../protocol';
import { contextChars, MAX_CONTEXT_CHARS } from '../../protocol/chat-context';
import type { PendingRequests } from '../../protocol/pending-requests';
import type { ConnectionStatus, ServiceConnection } from '../connection';
import { followPending } from '../pending-wire';
import { UpdateBanner } from './banner';
import { TurnNotices, type RetryOf, type RetryOutcome } from './turn-notices';
import { Composer } from './composer';
import { InstructionsLine, PromptShelf } from './agent-context-view';
import { PlanView } from './plan-view';
import { ContextChips } from './context-chips';
import { FileMentions } from './file-mentions';
import { ConversationList } from './conversation-list';
import { h, uniqueId } from './dom';
import { Header } from './header';
import { MessageView } from './message-view';
import { LiveTurn, type TurnEvent } from './live-turn';
import { OutboxSender } from './outbox-sender';
import { Outbox, type OutboxItem } from './outbox';
import type { KeptStorage } from './kept-list';
import { QueueView } from './queue-view';
import { PermissionCards } from './permission-cards';
import { markWaitingTools } from './waiting-tools';
import { RulesEditor } from './rules-editor';
import { SEARCH_LIMIT, SearchView } from './search-view';
import { ExportView } from './export-view';
import { sendCommand } from './supervision-wire';
import { UndoView } from './undo-view';
import { AttachmentThumbnails, AttachmentTray } from './attachments';
import { newClientId } from './client-id';
import type { KeptFiles } from './kept-files';
import { ChangesView } from './changes-view';

export interface ChatAppOptions {
  connection: ServiceConnection;
  /** The connection's tracker of waiting permission requests, when another part of the page shares it (the phone's machine status); default: the app's own. */
  pending?: PendingRequests;
  root: HTMLElement;
  /** Remembers the conversation on screen (webview state, localStorage). */
  memory?: { load(): string | undefined; save(conversationId: string | undefined): void };
  /** Where the outbox of unsent messages lives (the phone: localStorage); default: memory only. */
  outboxStorage?: KeptStorage;
  /** Where the bytes of files attached and not yet sent are kept for a reload (the phone: IndexedDB); default: memory only. */
  keptFiles?: KeptFiles;
  /** Extra controls at the bottom of the conversation drawer (the phone's "Remove this computer"). */
  drawerFooter?: HTMLElement;
  /** Shown in the top bar after the drawer toggle (the phone's machine switcher). */
  headerExtra?: HTMLElement;
  /** The phone: opens the way to pair this computer again (scan or paste a link), offered when it refused this page's credential. */
  pairAgain?: () => void;
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
  private readonly chips: ContextChips;
  /** The instruction files in force (under the header) and the saved prompts (above the message box). */
  private readonly instructions = new InstructionsLine();
  private readonly plan = new PlanView();
  private readonly prompts = new PromptShelf((text) => this.send(text));
  private readonly mentions: FileMentions | undefined;
  private readonly search: SearchView;
  private readonly exporter: ExportView;
  /** A message to show once its conversation's history is on screen (a search hit chosen). */
  private target: { conversationId: string; messageId: string } | undefined;
  /** A provider's failure and the waits before its retries, said at the turn. */
  private readonly notices: TurnNotices;
  private readonly updateBanner = new UpdateBanner();
  private readonly queue: QueueView;
  private readonly outbox: Outbox;
  private readonly undo: UndoView;
  private readonly thumbnails: AttachmentThumbnails;
  private readonly tray: AttachmentTray;
  /** A worktree conversation's review: files, hunks, revert, comment, commit, land, push, discard. */
  private readonly changes: ChangesView;
  /** On a new chat: "Own worktree" (chat's `worktree`); hidden once the conversation exists. */
  private readonly worktreeToggle: HTMLLabelElement;
  private readonly worktreeBox: HTMLInputElement;
  /** The outbox's messages: drawn waiting, sent in order, known as the page's own by their client_message_id. */
  private readonly sender: OutboxSender;
  /** The running turn of the conversation on screen, as its events draw it. */
  private readonly live: LiveTurn;
  /** The new chat on screen (its messages share this draft until the service names the conversation). */
  private draft = newClientId();
  /** Said once the screen is drawn: messages whose files the page's closing cut came back to the box (`putBackUnfinished`). */
  private unfinishedNote: string | undefined;
  /** Messages sent again with their files uploaded anew (`unsent`): not a second time. */
  private readonly resentOnce = new Set<string>();
  /** The view (`view`) and reason whose note already says that messages came back to the message box (`unsent`). */
  private unsentNoted = '';
  /** Conversations this page is deleting: their `conversation.deleted` is its own doing, said by nothing more. */
  private readonly deleting = new Set<string>();
  private readonly root: HTMLElement;
  private readonly memory: ChatAppOptions['memory'];
  private current: string | undefined;
  /** The fingerprint of the instruction files shown (list_instructions'), compared with each turn.ended's. */
  private instructionsShown: string | undefined;
  private waitingMarkQueued = false;
  private view = 0;
  /** The conversation drawer's id (one chat per paired machine on the phone: ids are made unique). */
  private readonly drawerId = uniqueId('ra-drawer');
  private connected = false;

  constructor(options: ChatAppOptions) {
    this.connection = options.connection;
    this.messages.self = () => this.connection.actingAs;
    this.root = options.root;
    this.memory = options.memory;
    this.header = new Header((mode, previous) => void this.changeMode(mode, previous), this.drawerId);
    this.list = new ConversationList({
      select: (id) => this.select(id),
      create: () => this.newChat(),
      remove: (id) => this.remove(id),
      self: () => this.connection.actingAs,
    });
    const action = this.connection.action?.bind(this.connection);
    this.permissions = new PermissionCards({
      pending: options.pending ?? followPending(this.connection),
      answer: (requestId, decision, note) => sendCommand(this.connection, { type: 'permission_response', request_id: requestId, decision, ...(note ? { note } : {}) }),
      conversationTitle: (conversationId) => this.list.title(conversationId),
      shownConversation: () => this.current,
      self: () => this.connection.actingAs,
      // In the editor, the change opens in VS Code's own diff editor (protocol/bridge.ts, `showDiff`).
      showDiff: action ? (requestId) => action('showDiff', requestId) : undefined,
    });
    this.permissions.onChange(() => {
      this.header.setWaiting(this.permissions.count);
      this.markWaitingTools();
    });
    this.messages.onToolCard = () => this.markWaitingTools();
    this.header.onWaitingClick(() => this.permissions.revealFirst());
    this.header.usage.compact.addEventListener('click', () => void this.compactNow());
    this.rules = new RulesEditor(this.connection);
    this.search = new SearchView({
      search: (query) => this.call({ type: 'search_messages', query, limit: SEARCH_LIMIT }),
      open: (hit) => this.openAt(hit.conversation_id, hit.message_id),
    });
    this.exporter = new ExportView({ connection: this.connection, current: () => this.current, report: (text, kind) => this.messages.addNote(text, kind) });
    this.chips = new ContextChips(options.outboxStorage);
    this.composer = new Composer(
      (text) => this.send(text),
      () => void this.stop(),
      options.outboxStorage,
    );
    const lookup = this.connection.lookup?.bind(this.connection);
    this.mentions = lookup
      ? new FileMentions({ input: this.composer.input, keyTarget: this.composer.element, lookup, pick: (item) => this.chips.add(item), error: (message) => this.messages.addNote(message, 'error') })
      : undefined;
    this.outbox = new Outbox(options.outboxStorage);
    this.undo = new UndoView({ call: (frame) => this.call(frame), list: this.messages.element, showThreeWay: action ? (argument) => action('showUndoThreeWay', argument) : undefined });
    this.thumbnails = new AttachmentThumbnails(this.connection);
    this.tray = new AttachmentTray(this.connection, this.thumbnails, options.outboxStorage, options.keptFiles);
    this.composer.addControls(...this.tray.controls);
    this.composer.addAbove(this.tray.element);
    this.composer.allowEmpty = () => this.tray.count > 0;
    this.messages.onStoredMessage = (node, message) => this.thumbnails.show(node, message.attachments);
    this.notices = new TurnNotices({ messages: this.messages, connection: this.connection, retry: (message) => this.retry(message), newId: newClientId });
    this.live = new LiveTurn({
      messages: this.messages,
      turnRetrying: (event) => this.notices.retrying(event),
      turnFailed: (failed) => this.notices.failed(failed),
      turnStopped: (stopped, replied) => this.notices.stopped(stopped, replied),
      thumbnails: this.thumbnails,
      claimSent: (clientMessageId) => this.sender.claimSent(clientMessageId),
    });
    this.sender = new OutboxSender({
      connection: this.connection,
      outbox: this.outbox,
      messages: this.messages,
      thumbnails: this.thumbnails,
      connected: () => this.connected,
      screen: () => ({ current: this.current, draft: this.draft }),
      answered: (item, answer) => this.answered(item, answer),
      notFound: (item, error) => this.unsent(item, error),
      refused: (item, error) => this.refused(item, error),
    });
    this.queue = new QueueView((clientMessageId) => void this.removeQueued(clientMessageId));
    this.changes = new ChangesView({
      call: (frame) => this.call(frame),
      commented: (conversationId, answer) => this.commented(conversationId, answer),
      editor: action ? { review: (id) => action('reviewChanges', id), openWorktree: (id) => action('openWorktree', id) } : undefined,
      changed: (conversationId, worktree) => {
        if (conversationId === this.current) this.header.setWorktree(worktree);
        void this.refreshConversations();
      },
    });
    this.header.changes.addEventListener('click', () => {
      if (this.current) void this.changes.open(this.current);
    });
    this.worktreeBox = h('input', { type: 'checkbox', class: 'worktree-toggle-input' });
    this.worktreeBox.addEventListener('change', () => (this.worktreeBox.dataset.touched = 'true'));
    this.worktreeToggle = h(
      'label',
      { class: 'worktree-toggle', title: 'The assistant works on a new branch in its own folder; you review and land its changes' },
      this.worktreeBox,
      h('span', {}, 'Own worktree'),
    );
    this.layout(options.drawerFooter);
    if (options.headerExtra) this.header.drawerToggle.after(options.headerExtra);
    if (options.pairAgain) this.header.offerPairAgain(options.pairAgain);

    this.current = this.memory?.load();
    this.putBackUnfinished();
    this.tray.keepOnly(this.outbox.all);
    this.worktreeToggle.hidden = this.current !== undefined;
    this.exporter.setConversation(this.current);
    // A new chat typed into before a reload is still on screen, with its waiting messages.
    if (!this.current) this.draft = this.outbox.all.find((item) => !item.conversation_id && item.draft)?.draft ?? this.draft;
    if (!this.current) this.messages.showEmpty('Start a conversation: type a message below.');
    this.sender.showPending();
    if (!this.current) this.noteUnfinished();
    this.connection.onEvent((event) => this.onEvent(event));
    this.connection.onState((state) => this.onState(state));
  }

  private layout(footer: HTMLElement | undefined): void {
    const drawer = h('aside', { class: 'drawer', id: this.drawerId }, this.search.element, this.list.element, this.rules.element, footer);
    this.header.element.querySelector('.title')?.after(this.exporter.element);
    // A new chat's "Own worktree" sits in the bar where the conversation's Export and cost will: the bar keeps its height on the first send (s32).
    this.header.element.querySelector('.mode')?.before(this.worktreeToggle);
    const scrim = h('div', { class: 'scrim', 'aria-hidden': 'true' });
    const main = h(
      'main',
      { class: 'main' },
      this.updateBanner.element,
      this.instructions.element,
      this.plan.element,
      this.messages.element,
      this.permissions.element,
      this.queue.element,
      this.mentions?.element,
      this.chips.element,
      this.prompts.element,
      this.composer.element,
    );
    this.root.classList.add('app');
    this.root.replaceChildren(this.header.element, h('div', { class: 'body' }, drawer, scrim, main), this.changes.panel);
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

  /** Shows a conversation chosen outside the app (a notification's link: push/deep-link.ts); `changes`: its Changes view ("ready for review"). */
  openConversation(conversationId: string, view: 'chat' | 'changes' = 'chat'): void {
    if (conversationId !== this.current) this.select(conversationId);
    if (view === 'changes') void this.changes.open(conversationId);
  }

  /** A comment on a change went as the conversation's next message: the chat comes back to show it and the reply. */
  private commented(conversationId: string, answer: Promise<EnvelopeOf<'comment_on_change'> | undefined>): void {
    if (conversationId !== this.current) this.select(conversationId);
    this.composer.setRunning(true);
    void answer.then((result) => {
      if (result?.status !== 'ok' && conversationId === this.current) this.messages.addNote(`The comment was not sent: ${result?.error ?? 'not connected'}`, 'error');
    });
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
    this.composer.setConnected(this.connected, state.refused === true);
    // Offline, the outbox's bubbles say "waiting to send" (media/chat.css).
    this.root.classList.toggle('offline', !this.connected);
    if (this.connected) this.updateBanner.show(state.update);
    if (this.connected && !wasConnected) {
      // (Re)connected: catch up with whatever happened meanwhile, then send what waited in the outbox.
      void this.refreshConfig();
      void this.refreshAgentContext();
      void this.refreshConversations();
      void this.rules.refresh();
      void this.follow(this.current).then(() => this.sender.flush());
    }
    if (!this.connected && wasConnected) this.permissions.markStale();
  }

  private onEvent(event: ViewEvent): void {
    switch (event.event) {
      case 'chat.message':
      case 'chat.delta':
      case 'tool.call':
      case 'tool.result':
      case 'turn.retrying':
      case 'turn.ended':
        return this.onTurnEvent(event);
      case 'plan.updated':
        // The whole plan each time: a replayed one after a reconnect draws the same list again.
        if (event.conversation_id === this.current) this.plan.show(event.plan);
        return;
      case 'config.changed':
        if (event.fields.includes('permission_rules')) void this.rules.refresh();
        return void this.refreshConfig();
      case 'conversation.updated':
        // The event carries the conversation's row: no need to list them again. Its messages arrive
        // through following (chat.message), whoever sent them. Those it queued are held by the service.
        this.list.upsert(event.conversation);
        this.sender.known(event.conversation.queued.flatMap((q) => (q.client_message_id ? [q.client_message_id] : [])));
        if (event.conversation_id === this.current) this.showRow(event.conversation);
        return;
      case 'conversation.deleted':
        return this.deleted(event.conversation_id, event.by);
      case 'turn.undone':
        if (event.undone && event.message_id && event.conversation_id === this.current) this.undo.undone(event.message_id);
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
  private showRow(row: Conversation): void {
    this.header.setTitle(row.title);
    this.header.setWorktree(row.worktree);
    this.header.usage.show(row.usage);
    this.composer.setRunning(row.state !== 'idle');
    this.queue.show(row.queued);
  }

  private onTurnEvent(event: TurnEvent): void {
    const conversationId = event.conversation_id;
    if (!this.live.isNew(event)) return;
    // Our new chat's first event names its conversation (before it, we follow no other conversation).
    const named = this.sender.newChatNamedBy(event);
    if (named) {
      if (!this.current && named.draft === this.draft) {
        this.setCurrent(conversationId);
        // Its row (running) may have come before this event named the conversation.
        const row = this.list.row(conversationId);
        if (row) this.showRow(row);
      }
    }
    if (conversationId !== this.current) return;
    // An answer, a tool or the end: any wait before a retry is over.
    if (event.event !== 'turn.retrying') this.notices.settled();
    this.live.draw(event);
    if (event.event !== 'turn.ended') return;
    // A turn of a message whose failure is said here was answered (a retry, from here or elsewhere).
    if (event.outcome === 'answered' && event.message_id) this.notices.resolved(event.message_id);
    // Its reply may offer "Undo this turn" now that its files are written (none written: nothing new).
    if (event.files_written !== 0) void this.undo.refresh(conversationId);
    // It may have reached a folder with its own AGENTS.md, or one was edited: asked when the files in force differ from those shown.
    if (!(event.instructions && event.instructions === this.instructionsShown)) void this.refreshInstructions();
  }

  /**
   * Follows the conversation on screen: after a reconnect from the last `seq` seen (the service sends
   * exactly what was missed); afresh (or after a `reset`) the history is loaded first and the running
   * turn's events so far follow.
   */
  private async follow(conversationId: string | undefined): Promise<void> {
    if (!conversationId) return;
    const view = this.view;
    const after = this.live.lastSeqOf(conversationId);
    let shown = after === undefined ? await this.loadHistory(conversationId) : undefined;
    const answer = await this.call({ type: 'follow_conversation', conversation_id: conversationId, ...(after !== undefined ? { after_seq: after } : {}) });
    if (answer?.status !== 'ok' || view !== this.view) return;
    this.live.followed(conversationId, answer.data.seq);
    if (answer.data.reset) shown = await this.loadHistory(conversationId);
    // Followed (the running turn's events so far drawn): a last message nothing answers offers Retry.
    const state = this.list.row(conversationId)?.state;
    if (shown && !this.live.running && (state === undefined || state === 'idle')) this.notices.unanswered(conversationId, shown.messages, shown.unanswered);
    await this.refreshPlan(conversationId);
  }

  /** The plan as stored, once the conversation is followed (after a reload or a switch); later changes come as plan.updated. */
  private async refreshPlan(conversationId: string): Promise<void> {
    const answer = await this.call({ type: 'get_plan', conversation_id: conversationId });
    if (answer?.status === 'ok' && conversationId === this.current) this.plan.show(answer.data.plan);
  }

  // ---- commands --------------------------------------------------------------------------

  private async call<C extends CommandInput>(frame: C): Promise<EnvelopeOf<C['type']> | undefined> {
    try {
      return await this.connection.request(frame);
    } catch {
      return undefined;
    }
  }

  /**
   * A typed message goes to the outbox at Send: sent now if connected, else when the connection returns. What the
   * chips show and the screen it was typed on go with it; one with attachments waits there for their uploads (those
   * that failed are named), drawn waiting, and those typed after it where it goes wait behind it (Outbox.ready).
   */
  private send(typed: string): void {
    // `/name argument`: a saved prompt's message is sent in its place.
    const text = this.prompts.expandTyped(typed) ?? typed;
    // Too much context is refused here, before the text leaves the input (and the files the tray).
    const context = this.chips.items();
    const size = contextChars(context);
    if (size > MAX_CONTEXT_CHARS) {
      this.composer.putBack(text);
      this.messages.addNote(`The attached context holds ${size} characters; at most ${MAX_CONTEXT_CHARS} can be sent with one message. Remove a chip, or select less.`, 'error');
      return;
    }
    this.chips.clearAdded();
    const typedAt = this.current ? { conversation_id: this.current } : { draft: this.draft, worktree: this.worktreeBox.checked };
    if (!this.current) this.header.setTitle(shortened(text, 80));
    // Stop at once; the conversation's row then says whether it runs (conversation.updated).
    if (this.connected) this.composer.setRunning(true);
    const item: OutboxItem = { client_message_id: newClientId(), text, ...(context.length > 0 ? { context } : {}), ...typedAt };
    // Kept now, in Send order: one with files waits in the outbox for their uploads (and those behind it with it).
    if (this.tray.count > 0) Object.assign(item, { uploading: this.tray.names, files: this.tray.keys });
    const files = item.uploading && this.tray.take();
    this.sender.add(item);
    if (files) this.whenUploaded(item, files);
  }

  /** A message's files are uploaded (at Send, or after a reload from their kept bytes): it goes, those that failed named. */
  private whenUploaded(item: OutboxItem, files: ReturnType<AttachmentTray['take']>): void {
    void files.then(({ attachments, failed }) => {
      if (failed.length > 0) this.messages.addNote(`Not attached: ${failed.join(', ')}`, 'error');
      this.sender.uploaded(item.client_message_id, attachments);
    });
  }

  /**
   * Retry on a failed turn: its stored message answered again (retry_turn; its events draw the reply, its
   * failure comes as turn.ended); a message never stored is sent again as a new one.
   */
  private async retry(message: RetryOf): Promise<RetryOutcome> {
    if (message.kind === 'turn') {
      if (this.current === message.conversationId) this.composer.setRunning(true);
      const answer = await this.call({
        type: 'retry_turn',
        conversation_id: message.conversationId,
        message_id: message.messageId,
        client_retry_id: message.clientRetryId,
        stream: true,
      });
      if (!answer) return { lost: true };
      // A resend of a retry a restart of the computer cut short: nothing runs (nor any turn.ended comes).
      if (answer.status === 'ok' && answer.data.interrupted) {
        if (this.current === message.conversationId) this.composer.setRunning(false);
        return { interrupted: true };
      }
      // A provider's failure is told by the turn's turn.ended, at the turn.
      if (answer.status === 'ok' || answer.code === 'server_error') return { sent: true };
      return { refused: answer.error ?? answer.code };
    }
    const item: OutboxItem = {
      client_message_id: newClientId(),
      text: message.text,
      ...(message.context?.length ? { context: message.context } : {}),
      ...(message.attachments?.length ? { attachments: message.attachments } : {}),
      ...(this.current ? { conversation_id: this.current } : { draft: this.draft }),
    };
    if (this.connected) this.composer.setRunning(true);
    this.sender.add(item);
    return { sent: true };
  }

  /** The service answered a chat the page sent: a refusal is told where it was typed; the reply comes as events. */
  private answered(item: OutboxItem, answer: EnvelopeOf<'chat'>): void {
    // Stored, or refused for good (a `not_found` goes to `unsent`): the page's copies of its files are not needed.
    this.tray.release(item.attachments);
    const onScreen = (item.conversation_id ?? (answer.status === 'ok' ? answer.data.conversation_id : undefined)) === this.current || (!this.current && item.draft === this.draft);
    if (answer.status === 'ok') {
      if (!this.current && item.draft === this.draft) this.setCurrent(answer.data.conversation_id);
      // The reply itself is drawn from the conversation's events (we follow it), turn.ended included.
    } else {
      this.live.abandonReply();
      this.runningAsRow();
      if (answer.code === 'server_error' && onScreen) {
        const stored = this.messages.element.querySelector<HTMLElement>(`[data-client-message-id="${CSS.escape(item.client_message_id)}"]`)?.dataset.messageId;
        const resend = { kind: 'resend' as const, text: item.text, context: item.context, attachments: item.attachments };
        this.notices.chatFailed(item.conversation_id ?? this.current, item.client_message_id, stored, answer.error ?? 'unknown error', resend);
      } else if (onScreen) this.messages.addNote(answer.error ?? 'The service refused the message.', 'error');
    }
    if (onScreen) this.composer.focus();
  }

  /** A chat refused or put back: Stop (shown at Send) follows the conversation's row again (nothing may run). */
  private runningAsRow(): void {
    const row = this.current === undefined ? undefined : this.list.row(this.current);
    this.composer.setRunning(row !== undefined && row.state !== 'idle');
  }

  /**
   * A chat the service answered `not_found`: the service stored nothing. Either its conversation was deleted
   * meanwhile (it waited offline, on another device or by the history's retention), or an attachment it
   * names is not one this identity may use (attachment-handlers' `visibleAttachment`): the conversation is
   * asked for (get_messages) to tell which. Sent into a new conversation it would start one the person did
   * not ask for; dropped, what they typed would be lost. It comes back to the message box, said once a screen,
   * for the person to send or not: a new chat's when the deleted conversation was on screen; when another
   * is, its box (the one box the page has: the screen they are reading stays) with a New chat button, as
   * Send there would put it in that conversation. Its chips and files come back with it (the tray); an
   * upload the computer let go is made again from this page's copy and the message sent in its place, before those
   * typed after it (s35, s36); the connection lost meanwhile, it is sent again as it was once reconnected.
   */
  private async unsent(item: OutboxItem, error = 'not found'): Promise<OutboxItem | undefined> {
    this.live.abandonReply();
    const id = item.conversation_id;
    const attachments = item.attachments ?? [];
    const asked = id === undefined ? undefined : await this.call({ type: 'get_messages', conversation_id: id, limit: 1 });
    // Not answered (the connection dropped again): only an attachment could tell another reason.
    const gone = id !== undefined && (asked ? asked.status !== 'ok' && asked.code === 'not_found' : !attachments.length);
    // Its conversation gone, its uploads are still there (no message carries them): back to the tray with the text.
    let back = attachments;
    let missing: string[] = [];
    if (!gone && attachments.length) {
      // An upload the computer let go (it keeps a person's newest 20 unsent: a message waited offline while newer
      // ones were made): uploaded again from this page's copies and sent, as the person asked; once, so that a
      // device uploading on and on cannot keep it going round. Without every copy, what there is goes to the tray.
      ({ again: back, missing } = await this.tray.uploadAgain(attachments));
      const resent = this.resentOnce.has(item.client_message_id);
      // Not uploaded (the connection lost again): the message as it was, asked again once reconnected (not a round).
      if (!this.connected && missing.length === 0 && back.some((info, i) => info.attachment_id === attachments[i].attachment_id)) return item;
      if (missing.length === 0 && !resent) {
        const { attempted: _attempted, ...resend } = { ...item, client_message_id: newClientId(), attachments: back };
        this.resentOnce.add(resend.client_message_id);
        return resend;
      }
    }
    if (gone && id === this.current) this.newChat();
    this.backInBox(item, back);
    const why = gone ? 'its conversation was deleted meanwhile' : attachments.length ? 'an attached file is no longer available' : error;
    const attached = missing.length ? ` Attach ${missing.join(', ')} again.` : '';
    const noted = `${this.view} ${why}`;
    if (this.unsentNoted !== noted) {
      const elsewhere = gone && this.current !== undefined;
      const returned = back.length === 0 ? 'What you typed is' : `What you typed and ${back.length === 1 ? 'its file are' : 'its files are'}`;
      const note = this.messages.addNote(`Not sent: ${why}. ${returned} back in the message box${elsewhere ? ': Send puts it in this conversation.' : '.'}${attached}`, 'info');
      if (elsewhere) note.append(h('button', { type: 'button', class: 'button secondary', onclick: () => this.newChat() }, 'New chat with it'));
      note.classList.toggle('with-action', elsewhere);
    }
    this.unsentNoted = noted;
    this.composer.focus();
    return undefined;
  }

  /**
   * A chat the service refused for now (`rate_limited`: the person's messages already waiting in line hold
   * its bound, docs/protocol.md "Queued messages"): stored nowhere, not sent again by the outbox (it would be
   * refused until one of them starts). Back in the message box with its chips and files, said once a screen.
   */
  private refused(item: OutboxItem, error = 'too many of your messages are waiting'): void {
    this.live.abandonReply();
    this.backInBox(item, item.attachments ?? []);
    const noted = `${this.view} ${error}`;
    if (this.unsentNoted !== noted) this.messages.addNote(`Not sent: ${error}. What you typed is back in the message box.`, 'info');
    this.unsentNoted = noted;
    this.composer.focus();
  }

  /** A message not sent, back in the message box: its text, its context chips, `attachments` in the tray. */
  private backInBox(item: OutboxItem, attachments: NonNullable<OutboxItem['attachments']>): void {
    for (const context of item.context ?? []) this.chips.add(context);
    this.tray.restore(attachments);
    this.composer.putBack(item.text);
    this.runningAsRow();
  }

  /**
   * At the page's start: messages whose files were still uploading when the page before closed (reloaded, or dropped
   * by the phone's browser). Their bytes went with it: sent as written they would lack the files they speak of, and
   * drawn waiting they would wait for nothing. They come back to the message box where they were typed (that screen
   * shown), each with those typed after it there (they waited behind it, never sent), in order, with their chips and
   * files, the unfinished ones named on chips to attach again; said once the screen is drawn (`noteUnfinished`).
   */
  private putBackUnfinished(): void {
    // Their files' bytes kept (IndexedDB): they stay, drawn waiting, and go as written once uploaded again.
    const items = this.outbox.takeUnfinished((item) => this.tray.allKept(item.files, item.uploading?.length ?? 0));
    for (const item of this.outbox.all) if (item.uploading && item.files) this.whenUploaded(item, this.tray.resume(item.uploading, item.files));
    if (items.length === 0) return;
    const first = items[0];
    this.current = first.conversation_id;
    this.memory?.save(this.current);
    if (!this.current && first.draft) this.draft = first.draft;
    if (!this.current && first.worktree !== undefined) this.worktreeBox.checked = first.worktree;
    const names: string[] = [];
    for (const item of items) {
      for (const context of item.context ?? []) this.chips.add(context);
      names.push(...this.tray.restoreUnfinished(item.uploading ?? [], item.files));
      this.tray.restore(item.attachments ?? []);
      if (item.text) this.composer.putBack(item.text);
    }
    const files = names.join(', ');
    this.unfinishedNote = `Not sent: ${files} ${names.length === 1 ? 'was' : 'were'} still uploading when the page closed. What you typed is back in the message box. Attach ${files} again.`;
  }

  private noteUnfinished(): void {
    if (this.unfinishedNote) this.messages.addNote(this.unfinishedNote, 'info');
    this.unfinishedNote = undefined;
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

  private async changeMode(mode: PermissionMode, previous: PermissionMode | undefined): Promise<void> {
    const answer = await this.call({ type: 'update_config', config: { permission_mode: mode } });
    if (answer?.status === 'ok') return;
    if (previous) this.header.setMode(previous, this.connected);
    this.messages.addNote(`Could not change the permission mode: ${answer?.error ?? 'not connected'}`, 'error');
  }

  private async refreshConfig(): Promise<void> {
    const answer = await this.call({ type: 'get_config' });
    if (answer?.status !== 'ok') return;
    this.header.setMode(answer.data.permission_mode, this.connected);
    // The toggle starts from service.json's default for this client's source, unless the person set it.
    const worktrees = answer.data.worktrees;
    if (worktrees && !this.worktreeBox.dataset.touched) this.worktreeBox.checked = worktrees.new_chat;
  }

  /** The saved prompts and the instruction files in force (they live in the workspace: asked again on each connect). */
  private async refreshAgentContext(): Promise<void> {
    const conversationId = this.current;
    // A conversation in its own worktree has its branch's project prompts.
    const answer = await this.call({ type: 'list_prompts', ...(conversationId ? { conversation_id: conversationId } : {}) });
    if (answer?.status === 'ok' && conversationId === this.current) this.prompts.setPrompts(answer.data.prompts);
    await this.refreshInstructions();
  }

  private async refreshInstructions(): Promise<void> {
    const conversationId = this.current;
    const answer = await this.call({ type: 'list_instructions', ...(conversationId ? { conversation_id: conversationId } : {}) });
    if (answer?.status === 'ok' && conversationId === this.current) {
      this.instructions.show(answer.data.files);
      this.instructionsShown = answer.data.fingerprint;
    }
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

  /** Draws the conversation's stored messages; answers them and why the last is unanswered, if it is (undefined when not drawn). */
  private async loadHistory(conversationId: string): Promise<ResultOf<'get_messages'> | undefined> {
    const view = this.view;
    const target = this.target?.conversationId === conversationId ? this.target : undefined;
    const limit = target ? HISTORY_LIMIT_TO_REVEAL : HISTORY_LIMIT;
    const answer = await this.call({ type: 'get_messages', conversation_id: conversationId, include_tools: true, limit });
    if (view !== this.view || this.current !== conversationId) return undefined;
    if (answer?.status === 'ok') {
      this.messages.showHistory(answer.data.messages);
      if (target) {
        this.target = undefined;
        if (!this.messages.reveal(target.messageId)) this.messages.addNote(`That message is older than the last ${limit} shown here.`);
      }
      void this.undo.refresh(conversationId);
      // What the running turn drew that is not stored yet, and what waits to be sent, stay after it.
      this.live.historyShown(answer.data.messages);
      this.sender.showPending(new Set(answer.data.messages.flatMap((m) => (m.client_message_id ? [m.client_message_id] : []))));
      this.noteUnfinished();
      return answer.data;
    } else if (answer?.code === 'not_found') {
      this.newChat();
    } else if (answer) {
      this.messages.addNote(answer.error ?? 'Could not load the conversation.', 'error');
    }
    return undefined;
  }

  /** The tool cards whose permission prompt waits say "waiting for you" (once, after a burst of cards or changes). */
  private markWaitingTools(): void {
    if (this.waitingMarkQueued) return;
    this.waitingMarkQueued = true;
    queueMicrotask(() => {
      this.waitingMarkQueued = false;
      markWaitingTools(this.messages.toolCards(), this.permissions.requests(), this.current);
    });
  }

  private setCurrent(conversationId: string | undefined): void {
    this.current = conversationId;
    this.permissions.conversationShown();
    this.memory?.save(conversationId);
    this.list.setCurrent(conversationId);
    this.exporter.setConversation(conversationId);
    this.worktreeToggle.hidden = conversationId !== undefined;
    if (!conversationId) this.header.setWorktree(null);
    this.header.setTitle(conversationId ? (this.list.title(conversationId) ?? this.headerTitleFallback()) : 'New chat');
    if (this.connected) void this.refreshAgentContext();
  }

  private headerTitleFallback(): string {
    return this.header.element.querySelector('.title')?.textContent ?? 'Conversation';
  }

  private select(conversationId: string): void {
    this.toggleDrawer(false);
    this.leave();
    this.setCurrent(conversationId);
    const row = this.list.row(conversationId);
    this.runningAsRow();
    this.header.usage.show(row?.usage);
    this.header.setWorktree(row?.worktree);
    this.queue.show(row?.queued ?? []);
    this.plan.show([]);
    this.messages.showEmpty('Loading…');
    void this.follow(conversationId);
  }

  private newChat(): void {
    this.toggleDrawer(false);
    this.leave();
    this.draft = newClientId();
    this.setCurrent(undefined);
    this.header.usage.show(null);
    this.plan.show([]);
    this.composer.setRunning(false);
    this.queue.show([]);
    this.messages.showEmpty('Start a conversation: type a message below.');
    this.sender.showPending();
    this.noteUnfinished();
    this.composer.focus();
  }

  /** Stops following the conversation leaving the screen: its events are no longer drawn here. */
  private leave(): void {
    this.view += 1;
    const previous = this.current;
    this.live.leave(previous);
    this.notices.clear();
    if (!previous) return;
    void this.call({ type: 'unfollow_conversation', conversation_id: previous });
  }

  private async remove(conversationId: string): Promise<void> {
    this.deleting.add(conversationId);
    try {
      const answer = await this.call({ type: 'delete_conversation', conversation_id: conversationId });
      if (answer?.status === 'ok' || answer?.code === 'not_found') {
        if (this.current === conversationId) this.newChat();
        this.list.remove(conversationId);
      } else {
        this.messages.addNote(`Could not delete: ${answer?.error ?? 'not connected'}`, 'error');
      }
    } finally {
      this.deleting.delete(conversationId);
    }
  }

  /**
   * `conversation.deleted`: gone from the list; on screen, the page starts a new chat and says why (not
   * when this page's own delete did it: its answer and its event come in either order).
   */
  private deleted(conversationId: string, by: 'user' | 'retention'): void {
    this.list.remove(conversationId);
    if (conversationId !== this.current || this.deleting.has(conversationId)) return;
    this.newChat();
    this.messages.addNote(by === 'retention' ? 'That conversation was deleted: it was older than the history keeps.' : 'That conversation was deleted on another device.', 'info');
  }
}
