import { wireText, type RequestId, type ServiceEvent } from '../protocol';
import type { ClientSession } from './session';
import { withField } from './with-field';

/** The events of a conversation that are numbered (`seq`) and replayed to a client that follows it again. */
export type FeedEvent = Extract<
  ServiceEvent,
  { event: 'chat.delta' | 'tool.call' | 'tool.result' | 'chat.message' | 'permission.request' | 'permission.resolved' | 'turn.ended' | 'turn.retrying' | 'plan.updated' | 'changes.ready' }
>;

/** The session and request that started a turn: the sender's copies of its events carry the request's id. */
export interface TurnOrigin {
  readonly sessionId: string;
  readonly requestId?: RequestId;
}

/** Which sessions an event goes to. */
export type EventFilter = (session: ClientSession) => boolean;

interface Entry {
  readonly seq: number;
  /** With `seq`, without the sender's request id (added for the sender only: another client's ids are not its own). */
  readonly event: FeedEvent;
  /** Who may receive it among the followers (a prompt only those who may answer); absent: every follower. */
  readonly filter?: EventFilter;
  readonly origin?: TurnOrigin;
  /** Its size as sent (JSON characters), counted once when it is kept. */
  readonly bytes: number;
  /** A `turn.retrying`'s end of its wait (performance.now()): a replay says what remains of it. Always
   * present (undefined for every other event): one shape for every entry made on a streamed piece's path. */
  readonly due: number | undefined;
}

/**
 * What is kept for catching up (docs/protocol.md, "Following a conversation"), in events and in bytes:
 * a chat.message holds its whole text, so a count alone let a client fill the memory (issue 20).
 * A conversation keeps its last `keptEvents` events and `conversationBytes`; its running turn's events
 * are kept whole up to `hardLimit` events and `turnBytes` (a fresh follower gets the turn so far); all
 * conversations together keep at most `totalBytes`, the ended turns of the least recently active going
 * first, then (only when running turns alone pass it) the oldest events of running turns.
 */
export const FEED_LIMITS = {
  keptEvents: 10_000,
  hardLimit: 100_000,
  conversationBytes: 4 * 1024 * 1024,
  turnBytes: 16 * 1024 * 1024,
  totalBytes: 32 * 1024 * 1024,
  /** Idle conversations nobody follows are forgotten beyond this many (their followers, if any, are never dropped). */
  keptConversations: 100,
};
export type FeedLimits = typeof FEED_LIMITS;

class Feed {
  readonly entries: Entry[] = [];
  private readonly following = new Set<ClientSession>();
  /** The followers as a list for delivering (made again after a change), how far each delivery's start moves in it, and where the next one starts. */
  private list: ClientSession[] | undefined;
  private step = 1;
  private rotation = 0;
  /** Events published, not yet sent to the followers, the sender among them (ConversationFeeds.sendToFollowers). */
  unsent: Entry[] = [];
  /** The seq of the running turn's first event (its user message); undefined between turns. */
  turnStart: number | undefined;
  /** A turn began with no user message of its own (retry_turn): its next event is its first. */
  startsNext = false;
  /** The sum of the entries' `bytes`, and of the running turn's among them. */
  bytes = 0;
  turnBytes = 0;

  constructor(public last: number) {}

  get followers(): ReadonlySet<ClientSession> {
    return this.following;
  }

  addFollower(session: ClientSession): void {
    this.following.add(session);
    this.list = undefined;
  }

  removeFollower(session: ClientSession): void {
    if (this.following.delete(session)) this.list = undefined;
  }

  /**
   * The followers for one delivery and where it starts: each follower's frames wait for the kernel writes
   * of those written before it (about 10-15 us each on these machines, docs/design.md "Where a follower's
   * delay goes"), and for any stop of the service's thread (or of the reader's) among them, so no
   * follower, the sender included, is always the last of a hundred. The start moves by `spreadingStep`
   * places each time, not one: a stop on a loaded machine lasts several pieces, and with the start one
   * further each time the follower last in one delivery was among the last in the next ones too, taking
   * that stop each time (docs/design.md "The order of a fan-out spread (s16, follow16)"). The step shares
   * no factor with the list's length, so in as many deliveries as followers each one is at every place
   * once. The list is not changed during a delivery (sendToFollowers skips one that left meanwhile:
   * closed by its send, its credential gone).
   */
  deliveryOrder(): { followers: readonly ClientSession[]; start: number } {
    if (this.list === undefined) {
      this.list = [...this.following];
      this.step = spreadingStep(this.list.length);
    }
    const followers = this.list;
    const start = followers.length === 0 ? 0 : this.rotation % followers.length;
    this.rotation = start + this.step;
    return { followers, start };
  }

  push(entry: Entry, startsTurn: boolean): void {
    if (startsTurn || this.startsNext) {
      this.startsNext = false;
      this.turnStart = entry.seq;
      this.turnBytes = 0;
    }
    this.entries.push(entry);
    this.bytes += entry.bytes;
    if (this.turnStart !== undefined) this.turnBytes += entry.bytes;
    if (entry.event.event === 'turn.ended') {
      this.turnStart = undefined;
      this.turnBytes = 0;
    }
  }

  /** Entries after `seq` (entries are numbered without gaps). */
  after(seq: number): Entry[] {
    const first = this.entries[0]?.seq ?? this.last + 1;
    return this.entries.slice(Math.max(0, seq + 1 - first));
  }

  /** Whether every event after `seq` is still held. */
  canReplayAfter(seq: number): boolean {
    const first = this.entries[0]?.seq ?? this.last + 1;
    return seq <= this.last && seq >= first - 1;
  }

  inTurn(entry: Entry): boolean {
    return this.turnStart !== undefined && entry.seq >= this.turnStart;
  }

  /** Within its own limits: events in batches (so appending stays cheap), bytes at once. Returns the bytes freed. */
  trim(limits: FeedLimits): number {
    const events = this.turnStart === undefined ? limits.keptEvents : limits.hardLimit;
    const cut = this.entries.length > events * 1.25 ? this.entries.length - events : 0;
    // Ended turns' events within the conversation's bytes, the running turn's within the turn's (the
    // ended ones, older, go first).
    return this.dropWhile((first, index) => index < cut || (!this.inTurn(first) && this.bytes - this.turnBytes > limits.conversationBytes) || this.turnBytes > limits.turnBytes);
  }

  /** Drops the oldest entries while `more` says so (given the bytes freed so far); returns the bytes freed. */
  dropWhile(more: (first: Entry, index: number, freed: number) => boolean): number {
    let count = 0;
    let freed = 0;
    while (count < this.entries.length) {
      const entry = this.entries[count]!;
      if (!more(entry, count, freed)) break;
      if (this.inTurn(entry)) this.turnBytes -= entry.bytes;
      this.bytes -= entry.bytes;
      freed += entry.bytes;
      count += 1;
    }
    if (count > 0) this.entries.splice(0, count);
    return freed;
  }
}

/** The golden ratio's smaller part (1 - 1/phi): successive multiples of it, taken modulo 1, stay the farthest apart. */
const GOLDEN_SPREAD = (3 - Math.sqrt(5)) / 2;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * How far each delivery's start moves in a list of `count` followers: about 0.38 of it, so that the places
 * one follower takes in deliveries in a row are spread over the order (at a hundred, never among the last
 * tenth twice in five in a row), and sharing no factor with `count`, so the starts go through every place.
 */
function spreadingStep(count: number): number {
  let step = Math.max(1, Math.round(count * GOLDEN_SPREAD));
  while (count > 1 && gcd(step, count) !== 1) step += 1;
  return step;
}

/** An event as one session receives it: its own request's id on the sender's copies only. */
function forSession(entry: Entry, session: ClientSession): FeedEvent {
  const id = entry.origin?.requestId;
  // Only a turn's events have an origin, and those events have an `id`.
  return id !== undefined && entry.origin?.sessionId === session.id ? (withField(entry.event, 'id', id) as FeedEvent) : entry.event;
}

/** An event replayed (a follow's catch-up): a wait (`turn.retrying`) says what remains of it, not its whole length again. */
function replayed(entry: Entry, session: ClientSession): FeedEvent {
  const event = forSession(entry, session);
  if (entry.due === undefined) return event;
  return withField(event, 'retry_in_ms', Math.max(0, Math.round(entry.due - performance.now()))) as FeedEvent;
}

/**
 * Each conversation's numbered events and who follows it (docs/protocol.md, "Following a conversation").
 * Numbers live in memory: a conversation's first number in a service run is about the run's start in
 * microseconds (and above any number given before in the run), so a number kept from an earlier run is
 * older than anything held and answers `reset`, never a wrong replay. Following and replaying happen in
 * one synchronous step, so no event can fall between the catch-up and the live stream.
 */
export class ConversationFeeds {
  private readonly feeds = new Map<string, Feed>();
  private readonly followed = new Map<ClientSession, Set<string>>();
  private highest = 0;
  /** The sum of every feed's bytes. */
  private bytes = 0;
  /** Feeds with events for their followers, sent once this turn of the event loop is done. */
  private readonly unsent = new Set<Feed>();

  constructor(private readonly limits: FeedLimits = FEED_LIMITS) {}

  /** The bytes held for catching up, all conversations together. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Numbers and keeps the event, and sends it to the conversation's followers (the sender one of them). */
  publish(event: FeedEvent, options: { filter?: EventFilter; origin?: TurnOrigin } = {}): FeedEvent {
    const feed = this.feedOf(event.conversation_id);
    const seq = (feed.last += 1);
    this.highest = Math.max(this.highest, seq);
    const numbered = withField(event, 'seq', seq) as FeedEvent;
    // Serialized here to be measured: the followers' sockets send this text (wireText keeps it for this run).
    const entry: Entry = {
      seq,
      event: numbered,
      filter: options.filter,
      origin: options.origin,
      bytes: wireText(numbered).length,
      due: event.event === 'turn.retrying' ? performance.now() + event.retry_in_ms : undefined,
    };
    // A turn starts with its user message (a chat of any client, a webhook message).
    feed.push(entry, event.event === 'chat.message' && event.message.role === 'user');
    this.bytes += entry.bytes - feed.trim(this.limits);
    if (this.bytes > this.limits.totalBytes) this.trimAll();
    this.deliver(feed, entry);
    return entry.event;
  }

  /**
   * A turn began that tells no user message (retry_turn answers a stored one): its next event starts it,
   * so a client following afresh meanwhile is sent the turn so far, as for a chat's turn.
   */
  beginTurn(conversationId: string): void {
    this.feedOf(conversationId).startsNext = true;
  }

  /** Whether the session follows the conversation (it then receives that conversation's events numbered). */
  follows(session: ClientSession, conversationId: string): boolean {
    return this.followed.get(session)?.has(conversationId) === true;
  }

  /**
   * The session follows the conversation (access already checked). Without `afterSeq`: from now, after
   * the running turn's events so far; with it: everything after it, or (`reset`) the running turn's
   * events when those after it are no longer held. `replay: false` (the sender of a turn): from now only.
   */
  follow(session: ClientSession, conversationId: string, afterSeq?: number, replay = true): { seq: number; reset: boolean } {
    const feed = this.feedOf(conversationId);
    // The followers so far get what is still on its way to them; the new one gets it in its replay.
    this.sendToFollowers(feed);
    const reset = afterSeq !== undefined && !feed.canReplayAfter(afterSeq);
    if (replay) {
      const asked = afterSeq !== undefined && !reset ? afterSeq : feed.turnStart === undefined ? feed.last : feed.turnStart - 1;
      // Each seq once on a connection: one following already was just sent every event so far (the
      // pending ones above), so none is sent again, whatever it asks (a client may not drop repeats by
      // seq). After an unfollow, a follow is afresh (a view switched back replays the running turn).
      const from = feed.followers.has(session) ? feed.last : asked;
      for (const entry of feed.after(from)) if (!entry.filter || entry.filter(session)) session.send(replayed(entry, session));
    }
    feed.addFollower(session);
    let mine = this.followed.get(session);
    if (!mine) this.followed.set(session, (mine = new Set()));
    mine.add(conversationId);
    return { seq: feed.last, reset };
  }

  unfollow(session: ClientSession, conversationId: string): void {
    const feed = this.feeds.get(conversationId);
    // What was published while it followed is its (EventHub.broadcast counted it as sent to it).
    if (feed) this.sendToFollowers(feed);
    feed?.removeFollower(session);
    this.followed.get(session)?.delete(conversationId);
  }

  /** The session closed: it follows nothing any more. */
  leave(session: ClientSession): void {
    for (const conversationId of this.followed.get(session) ?? []) this.feeds.get(conversationId)?.removeFollower(session);
    this.followed.delete(session);
  }

  /** The conversation was deleted: its events and followers go (a new conversation never reuses the id). */
  forget(conversationId: string): void {
    const feed = this.feeds.get(conversationId);
    if (!feed) return;
    for (const session of feed.followers) this.followed.get(session)?.delete(conversationId);
    feed.unsent = [];
    this.remove(conversationId, feed);
  }

  /**
   * All conversations over `totalBytes`: the ended turns' events of the least recently active go first;
   * running turns' oldest events only when those alone pass it. A follower behind what was dropped gets
   * `reset` (Feed.canReplayAfter), never a wrong replay.
   */
  private trimAll(): void {
    const limit = this.limits.totalBytes;
    for (const feed of this.feeds.values()) {
      if (this.bytes <= limit) return;
      this.bytes -= feed.dropWhile((first, _index, freed) => this.bytes - freed > limit && !feed.inTurn(first));
    }
    for (const feed of this.feeds.values()) {
      if (this.bytes <= limit) return;
      this.bytes -= feed.dropWhile((_first, _index, freed) => this.bytes - freed > limit);
    }
  }

  private remove(conversationId: string, feed: Feed): void {
    this.bytes -= feed.bytes;
    this.feeds.delete(conversationId);
  }

  /**
   * Every follower, the turn's sender among them, once this turn of the event loop is done
   * (setImmediate), in the same spread order (deliveryOrder): the pieces a provider's read holds are published one
   * after the other in one run and go to each follower together (one write for the lot,
   * transport/connections/ws-frames.ts), in order, once. The sender is one of the people watching, no
   * longer written to before the others: its later pieces waited for no fan-out then, but each follower
   * waited for all of it (docs/design.md, "Where a follower's delay goes"). A reply that must follow its
   * events (the chat's) is sent after `flush`.
   */
  private deliver(feed: Feed, entry: Entry): void {
    feed.unsent.push(entry);
    if (this.unsent.size === 0) setImmediate(() => this.sendAllUnsent());
    this.unsent.add(feed);
  }

  /**
   * What was published to the conversation and is still on its way goes to its followers now: the
   * chat's answer comes after its turn's events (docs/protocol.md, `chat` with `stream`).
   */
  flush(conversationId: string): void {
    const feed = this.feeds.get(conversationId);
    if (feed) this.sendToFollowers(feed);
  }

  private sendAllUnsent(): void {
    // Taken first: an event published by a send (a session closing) waits for the next turn, not lost.
    const feeds = [...this.unsent];
    this.unsent.clear();
    for (const feed of feeds) this.sendToFollowers(feed);
  }

  /** The feed's events not yet sent to its followers, to each follower in turn (the sender's copies with its request id). */
  private sendToFollowers(feed: Feed): void {
    if (feed.unsent.length === 0) return;
    const entries = feed.unsent;
    feed.unsent = [];
    const following = feed.followers;
    const { followers, start } = feed.deliveryOrder();
    for (let i = 0; i < followers.length; i += 1) {
      const session = followers[(start + i) % followers.length]!;
      for (const entry of entries) {
        // One that left meanwhile (unfollowed, closed: by a send, its credential gone) is skipped.
        if ((entry.filter && !entry.filter(session)) || !following.has(session)) continue;
        try {
          session.send(entry.origin === undefined ? entry.event : forSession(entry, session));
        } catch {
          // One follower's failure must not keep the event from the others (a session's send closes it
          // itself when its client is gone; nothing else is left to do here).
        }
      }
    }
  }

  private feedOf(conversationId: string): Feed {
    let feed = this.feeds.get(conversationId);
    if (feed) {
      // Most recently used last, so the forgotten ones are the oldest.
      this.feeds.delete(conversationId);
      this.feeds.set(conversationId, feed);
      return feed;
    }
    // Idle feeds are forgotten before the new one is kept: forgetting it at once (no follower yet) would
    // leave its first events, and a follower added next, on a feed nobody publishes to again.
    this.forgetIdle(this.limits.keptConversations - 1);
    const first = Math.max(Date.now() * 1000, this.highest + 1);
    feed = new Feed(first - 1);
    this.highest = Math.max(this.highest, feed.last);
    this.feeds.set(conversationId, feed);
    return feed;
  }

  /** Forgets the least recently used feeds nobody follows and no turn runs in, down to `keep` if it can. */
  private forgetIdle(keep: number): void {
    if (this.feeds.size <= keep) return;
    for (const [conversationId, feed] of this.feeds) {
      if (this.feeds.size <= keep) return;
      if (feed.followers.size === 0 && feed.turnStart === undefined) this.remove(conversationId, feed);
    }
  }
}
