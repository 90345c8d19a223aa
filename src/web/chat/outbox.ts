/**
 * Messages typed but not yet answered by the service: kept (localStorage on the phone) so nothing typed
 * is lost to a dropped connection or a reload, and sent in order as soon as connected. Each has
 * its `client_message_id`, so a resend after a lost answer is answered once by the service
 * (docs/protocol.md, "Resending a chat").
 */
import type { ContextItem } from '../../protocol';
import type { AttachmentInfo } from '../../protocol';
import { readKept, writeKept, type KeptStorage } from './kept-list';

export interface OutboxItem {
  client_message_id: string;
  text: string;
  /** What the chips showed when it was sent (the chat's `context`). */
  context?: ContextItem[];
  /** Uploaded attachments it carries (sent as their ids). */
  attachments?: AttachmentInfo[];
  /** The conversation it goes to; undefined: it starts a new one (`draft` says which new chat). */
  conversation_id?: string;
  /** Messages typed in the same new chat share a draft: once the first made the conversation, the rest follow it. */
  draft?: string;
  /** Whether a new chat works in its own git worktree (chat's `worktree`; only with `draft`; absent: the service's default). */
  worktree?: boolean;
  /** Sent at least once (its answer was lost): the service may have stored it already. */
  attempted?: boolean;
  /**
   * The names of its files still uploading at Send: not sent (nor those typed after it where it goes) until they
   * are done (`uploaded`). Found so at a page's start, their bytes went with the page before (`takeUnfinished`).
   */
  uploading?: string[];
}

const KEY = 'remote-assistant.outbox';

export class Outbox {
  private items: OutboxItem[];

  constructor(private readonly storage: KeptStorage | undefined) {
    this.items = readKept<OutboxItem>(storage, KEY, (item) => typeof item.client_message_id === 'string' && typeof item.text === 'string');
  }

  get all(): readonly OutboxItem[] {
    return this.items;
  }

  add(item: OutboxItem): void {
    this.items.push(item);
    this.save();
  }

  /**
   * The messages to send now, in order: each one not on its way yet (`onItsWay`), without waiting for
   * earlier answers (the service queues them), except (a) a new chat's next messages, which wait until its
   * first one has named the conversation, and (b) the messages behind one carrying files the service is not
   * known to hold yet (`held`: stored or queued), which wait for it: its upload may have gone meanwhile, and it
   * is then uploaded again and sent in its place (`replace`), still before them; (c) a message whose files still
   * upload (`uploading`), and those behind it.
   */
  ready(onItsWay: (clientMessageId: string) => boolean, held: (clientMessageId: string) => boolean): OutboxItem[] {
    const unnamedDrafts = new Set<string>();
    const behindFiles = new Set<string | undefined>();
    return this.items.filter((item) => {
      const place = item.conversation_id ?? item.draft;
      if (behindFiles.has(place)) return false;
      if (item.uploading) {
        behindFiles.add(place);
        return false;
      }
      if (item.attachments?.length && !held(item.client_message_id)) behindFiles.add(place);
      if (!item.conversation_id && item.draft) {
        if (unnamedDrafts.has(item.draft)) return false;
        unnamedDrafts.add(item.draft);
      }
      return !onItsWay(item.client_message_id);
    });
  }

  /** The message sent in its place (its files uploaded again, a new client_message_id): where it was, before those typed after it. */
  replace(clientMessageId: string, item: OutboxItem): void {
    this.items = this.items.map((old) => (old.client_message_id === clientMessageId ? item : old));
    this.save();
  }

  /** Its files are uploaded (those that failed left out): it goes now, in its place. Undefined: not in the outbox. */
  uploaded(clientMessageId: string, attachments: NonNullable<OutboxItem['attachments']>): OutboxItem | undefined {
    const item = this.items.find((old) => old.client_message_id === clientMessageId);
    if (!item) return undefined;
    delete item.uploading;
    if (attachments.length > 0) item.attachments = attachments;
    this.save();
    return item;
  }

  /**
   * At a page's start: the messages whose files were still uploading when the page before closed (their bytes went
   * with it, they cannot go as written), each with those typed after it where it goes (they waited for it, never
   * sent), taken out in order. Messages elsewhere stay.
   */
  takeUnfinished(): OutboxItem[] {
    const places = new Set<string | undefined>();
    const taken = this.items.filter((item) => {
      const place = item.conversation_id ?? item.draft;
      if (item.uploading) places.add(place);
      return places.has(place);
    });
    if (taken.length === 0) return taken;
    this.items = this.items.filter((item) => !taken.includes(item));
    this.save();
    return taken;
  }

  markAttempted(item: OutboxItem): void {
    item.attempted = true;
    this.save();
  }

  remove(clientMessageId: string): void {
    this.items = this.items.filter((item) => item.client_message_id !== clientMessageId);
    this.save();
  }

  /** The first message of a new chat made its conversation: the others typed in that chat go there too. */
  conversationMade(draft: string, conversationId: string): void {
    for (const item of this.items) {
      if (item.draft === draft && !item.conversation_id) item.conversation_id = conversationId;
    }
    this.save();
  }

  private save(): void {
    // Storage full or refused: the messages still live in memory for this page's life.
    writeKept(this.storage, KEY, this.items);
  }
}
