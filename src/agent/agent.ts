import { randomUUID } from 'node:crypto';
import { displayName, ServiceError, type Message, type QueuedMessage, type SavedPrompt, type ServiceConfig, type ServiceEvent } from '../protocol';
import { nullLogger, type Logger, type PreparedLine } from '../log/logger';
import { bindAttachments, insertAttachment, keyIsPersons, usageOp, type BlobRef, type MessageRow, type NewAuditEntry, type NewMessage, type Store, type UsageRow, type WriteTx } from '../store';
import { canAccess, OWNER_PERSON, sourceLabel, sourceText, type Source } from '../protocol/sources';
import { wellFormed } from '../protocol/code-points';
import { contextChars, type ContextItem } from '../protocol';
import { CompactionFailed, Compactor, type CompactionCall } from './compaction/compactor';
import { requestBudget, windowOf, type RequestBudget } from './compaction/budget';
import { attachmentInfoOf, type StoredAttachment } from './attachments/content';
import { messageOf } from './client-message';
import { withAttachments } from './attachments/model-input';
import { seesImages } from './attachments/vision';
import type { ConversationActivity } from './conversation-activity';
import { HistoryCache } from './history-cache';
import { KeyedQueue } from './keyed-queue';
import { previewOf } from './preview';
import { InstructionsFingerprints, type InstructionFileInfo } from './prompt/instruction-files';
import { listSavedPrompts } from './prompt/saved-prompts';
import { TurnContext, type TurnInstructions } from './prompt/turn-context';
import { endsTurn, type PermissionGate } from './permissions';
import { ProviderError, type ChatMessage, type Provider, type ToolSpec } from './providers/types';
import { DEFAULT_TOOL_TIMEOUT_MS, runToolCall, type ToolCallResult } from './tool-runner';
import type { ToolRegistry } from './tools/registry';
import type { Tool, ToolArea, ToolImage } from './tools/types';
import { worktreeByDefault, worktreeRequired, type Worktrees } from './worktrees/worktrees';
import { TurnFiles } from './turn-files';
import { UserCommit } from './user-commit';
import { RequestViews, requestMessages } from './request-view';
import { ModelToolNames, Transcripts, type ToolCallData, type ToolResultData } from './transcript';
import { TurnUsage } from './usage/turn-usage';
import { messageUsageOf } from './usage/usage-wire';
import { draftCommitMessage } from './commit-message';
import { packedMap } from '../platform/packed-map';
import { isoTime } from '../platform/iso-time';

export const TITLE_LENGTH = 80;

export interface ChatInput {
  message: string;
  /** The chat's `context` (the editor's chips): stored with the message, given to the model before it. */
  context?: ContextItem[];
  /** Checked attachments the user message carries (stored with it). */
  attachments?: readonly StoredAttachment[];
  conversationId?: string;
  /** Source of the session: recorded (its text) on new conversations, and checked for ownership. */
  source: Source;
  userId?: string;
  /** Who sent it (protocol/sources.ts personOf; default: its source): while it waits, only they (or the owner) may remove it. */
  sender?: string;
  /** Who sent it as people read it (a device's name, `editor`, `LAN`): stored with the message, shown beside it. */
  from?: string;
  /** The chat's client_message_id: shown while the message waits behind a running turn, and what removes it. */
  clientMessageId?: string;
  /** Stored with the user message so a resent chat is recognised, also after a restart (commands/turns/chat-resends.ts). */
  clientKey?: string;
  /**
   * The turn comes from a session (password) user: its tool prompts are the owner's to answer, or a
   * user allowed to approve its own run_command could read the access token (docs/protocol.md, "Roles").
   */
  ownerAnswersPrompts?: boolean;
  /** Overrides the configured model (a webhook account's `model`). */
  model?: string;
  signal?: AbortSignal;
  /** Ask the provider to stream, so the turn yields `delta` events (else only the final text). */
  stream?: boolean;
  /**
   * The model finished one answer (its pieces all given), before the turn stores anything of it: the
   * caller sends the events it holds for the loop's next turn now (ConversationFeeds.flush), so the last
   * pieces do not wait for the commit's work, nor share the cores with the threads it wakes
   * (docs/design.md, "The first pieces and the last (s27, follow27)").
   */
  answered?: () => void;
  /**
   * Stores the final reply instead of the agent doing it, so a caller can write more in the same
   * transaction (the webhook channel stores the reply together with its delivery); `alsoInTx` writes the
   * turn's usage in that transaction.
   */
  storeReply?: (reply: NewMessage, alsoInTx: (tx: WriteTx) => void) => Promise<void>;
  /** Who sent the message as people read it (`phone (relay), device “Pixel”`), for the model's environment block; default: the source's label. */
  client?: string;
  /**
   * The chat's `worktree`: a new conversation works in its own git worktree (true) or the workspace
   * (false); undefined: service.json's default for the source. On an existing conversation it must
   * match what the conversation has, or be absent.
   */
  worktree?: boolean;
}

export type AnswerInput = Omit<ChatInput, 'message' | 'context' | 'attachments' | 'conversationId' | 'userId' | 'sender' | 'clientMessageId' | 'clientKey' | 'worktree'>;

/** retry_turn: the conversation's last user message, answered again (its `from` is the stored message's). */
export type RetryInput = Omit<AnswerInput, 'from' | 'storeReply' | 'model' | 'ownerAnswersPrompts'> & {
  conversationId: string;
  messageId: string;
  /**
   * Its client_retry_id with its sender (commands/turns/retry-resends.ts): stored with the message's id once
   * the checks pass, in the journal's file before the model is asked, durable with the turn's first commit.
   */
  retryKey?: string;
  /** Whether the turn's prompts are the owner's only, given whether the owner sent the message (its stored key says). */
  ownerAnswersPrompts(sentByOwner: boolean): boolean;
};

/**
 * What a turn tells its caller while it runs, in the order the agent produced it, as the wire's events
 * (protocol/events.ts) without `seq` and `id`, which the caller adds (commands/turns/turn-runner.ts):
 * - `chat.message`: a message of the turn was stored, first the user's (the turn starts: the
 *   conversation is known), last the reply;
 * - `chat.delta`: a piece of the reply's text (only when the input asked to `stream`);
 * - `tool.call` / `tool.result`: the turn's tools;
 * - `plan.updated`: the todo tool wrote the conversation's plan (between its call and its result).
 */
export type TurnEvent = Extract<ServiceEvent, { event: 'chat.message' | 'chat.delta' | 'tool.call' | 'tool.result' | 'plan.updated' | 'turn.retrying' }>;

/**
 * Receives a turn's events synchronously, as they happen. A callback rather than an async iterator: the
 * permission broker sends its `permission.request` synchronously from inside the tool run, so an event
 * queued for a consumer's next pull could be overtaken by it (the client would hear of the prompt before
 * the tool.call it belongs to); delivering each event before the agent goes on keeps the order.
 */
export type TurnEventSink = (event: TurnEvent) => void;

export interface ChatOutput {
  response: string;
  conversation_id: string;
  cancelled?: boolean;
  /** Taken out of the queue by a client before its turn began (then also `cancelled`). */
  removed?: boolean;
  /** The instruction files in force once the turn answered, as list_instructions' `fingerprint` (turn.ended's `instructions`). */
  instructions?: string;
  /** The file writes the turn asked (turn.ended's `files_written`); absent when earlier tries of the turn may have written some (a retry). */
  filesWritten?: number;
}

export type ProviderResolver = (config: ServiceConfig) => Provider;

export interface AgentDeps {
  store: Store;
  config: () => ServiceConfig;
  provider: ProviderResolver;
  tools: ToolRegistry;
  gate: PermissionGate;
  logger: Logger;
  toolTimeoutMs?: number;
  /** Counts each conversation's queued turns (list_conversations' `state`). */
  activity?: ConversationActivity;
  /**
   * A conversation got a message: the user's (stored) or the reply (stored; with `activity`, told by it at
   * the turn's end instead). The service tells every client, so a conversation continued from the phone, a
   * script or a webhook shows live elsewhere.
   */
  onActivity?: (conversationId: string, source: string) => void;
  /** Where attached files are saved for the model (default: none, they are named as not saved). */
  workspaceRoots?: () => string[];
  /** The data directory: its AGENTS.md holds the user's instructions for every project (default: none). */
  dataDir?: string;
  /** false: only service.json's system_prompt is sent, none of the turn's context (the benchmarks' baseline). Default true. */
  withContext?: boolean;
  /** Conversations in their own git worktree (agent/worktrees); without it, every conversation works in the workspace. */
  worktrees?: Worktrees;
}

export type { InstructionFileInfo };

/** A new conversation's title: its first message on one line, without bidi or control characters (protocol/display-name.ts). */
export function titleOf(message: string): string {
  const line = displayName(message.replace(/\s+/g, ' ')).trim();
  return [...line].slice(0, TITLE_LENGTH).join('') || 'New conversation';
}

class Cancelled extends Error {}

function ignore(): void {}

/** The turn's user message (and a new conversation's row): written at once, synced by the turn's first outward effect (UserCommit). */
const DEFER_SYNC = { deferSync: true } as const;

/** A compaction within a turn or compact_conversation: its calls count in the usage, its stored message goes out as an event. */
function compactionCall(
  conversationId: string,
  shape: { config: ServiceConfig; provider: Provider; model: string },
  budget: RequestBudget,
  usage: TurnUsage,
  onEvent: TurnEventSink,
  signal?: AbortSignal,
  ready?: () => Promise<void>,
): CompactionCall {
  const { config, provider, model } = shape;
  return {
    conversationId,
    provider,
    model,
    budget,
    signal,
    ready,
    onResult: (result) => usage.add(config, provider.name, model, result),
    onStored: (message) => onEvent({ event: 'chat.message', conversation_id: conversationId, message }),
  };
}

/**
 * A turn the provider could not answer: a server_error to clients, keeping the provider's failure
 * (kind, status, Retry-After) for a caller that decides whether to try again (the webhook inbox).
 */
export class ProviderFailure extends ServiceError {
  constructor(readonly failure: ProviderError) {
    super('server_error', failure.message);
  }
}

/**
 * A chat turn: store the user's message, then ask the model, running the tools it calls (under the
 * permission gate) until it answers or `max_steps` is reached, then store the reply. Tool calls and
 * results are stored as `tool` messages as they happen; the final reply is stored only when complete.
 */
export class Agent {
  private readonly queue = new KeyedQueue();
  private readonly history: HistoryCache;
  private readonly compactor: Compactor;
  /** Each conversation's history as its last request carried it (request-view.ts). */
  private readonly views: RequestViews;
  private readonly context: TurnContext;
  /** The window each provider/model's calls last reported (the editor's models tell it with each answer). */
  private readonly reportedWindows = new Map<string, number>();
  /** The instruction files' fingerprints (list_instructions', turn.ended's), under this service's key for this run. */
  private readonly fingerprints = new InstructionsFingerprints();
  /** Stops the service's warm-up and its practice turn, if they run (endsWarmUp): a turn of this agent began. */
  private practiceStop: AbortController | undefined;
  /** A turn (or another queued job: a compaction) has begun since the agent was made (endsWarmUp). */
  private turnBegun = false;
  /** The tools offered last (offer). */
  private offered: { tools: Tool[]; names: ModelToolNames; specs: ToolSpec[]; byName: Map<string, Tool> } | undefined;

  /** `context`: one made beforehand (the service's, warmed up before its store is open), another agent's (a practice twin's: see practise), else one of its own. */
  constructor(
    private readonly deps: AgentDeps,
    context?: TurnContext,
  ) {
    // The transcripts keep a conversation's rows only while the history cache does (its bytes bound both).
    this.history = new HistoryCache(deps.store.messages, {
      lastWrite: () => deps.store.db.lastWrite,
      cuts: () => deps.store.history.cuts,
      forgotten: (id) => {
        this.compactor.transcripts.forget(id);
        this.views.forget(id);
      },
    });
    this.compactor = new Compactor(deps.store, deps.logger, new Transcripts({ kept: (id) => this.history.holds(id) }));
    // The history cache adds to a conversation's rows and cuts them from the front, and lets go of them
    // (`forgotten`, above) before giving any other objects: a view's overlap is checked at its ends.
    this.views = new RequestViews({ kept: (id) => this.history.holds(id), appendOnly: true });
    this.context = context ?? new TurnContext(deps.workspaceRoots ?? (() => []), deps.dataDir);
  }

  /**
   * The instruction files the model is given: those of every conversation (the user's, the workspace
   * roots'), and with a conversation the nearest AGENTS.md above each path its tools touched.
   */
  async instructionFiles(conversationId: string | undefined, source: Source): Promise<{ files: InstructionFileInfo[]; fingerprint?: string }> {
    if (conversationId === undefined) return { files: [...(await this.rootInstructionFiles())] };
    this.requireConversation(conversationId, source);
    const rows = await this.history.rows(conversationId);
    const files = await this.context.filesInForce(rows, this.recordedArea(conversationId)?.roots);
    return { files: files.map(({ text: _text, ...info }) => info), fingerprint: this.fingerprints.of(files) };
  }

  /**
   * The instruction files of every conversation (get_config's, on every call): the same frozen array
   * while they are unchanged, so its answer is kept by identity (commands/handlers.ts).
   */
  rootInstructionFiles(): Promise<readonly InstructionFileInfo[]> {
    return this.context.rootFileInfos();
  }

  /**
   * A twin of this agent for the warm-up's practice turn (service.ts, commands/turns/practice-turn.ts):
   * the same deps but `practice`'s scratch store, tools and canned provider, so its turn compiles the
   * turn's own code (the loop, the budget, usage, the title, the transcript, the store's statements)
   * before the first chat rather than during it. It shares this agent's instruction files (read ahead by
   * the warm-up) and asks git nothing (TurnContext.practiceTwin), and has no logger, no worktrees and
   * only the practice's own activity and announcements (`practice`'s, to a hub no client is in: see
   * commands/turns/practice-turn.ts): nothing of it is seen. A turn of this agent beginning meanwhile ends
   * the warm-up (endsWarmUp), the practice with it: that turn compiles the same code.
   */
  practiceTwin(practice: { store: Store; provider: Provider; tools: ToolRegistry } & Partial<Pick<AgentDeps, 'activity' | 'onActivity'>>): Agent {
    return new Agent(
      {
        ...this.deps,
        store: practice.store,
        provider: () => practice.provider,
        tools: practice.tools,
        logger: nullLogger,
        activity: practice.activity,
        onActivity: practice.onActivity,
        worktrees: undefined,
      },
      this.context.practiceTwin(),
    );
  }

  /**
   * The service's warm-up ends when a turn of this agent begins (`stop` aborts, the practice with it):
   * that turn runs for the first time what the warm-up had left to warm, and its time is not to be
   * shared with the warm-up. False, and `stop` is not kept, when a turn has begun already.
   */
  endsWarmUp(stop: AbortController): boolean {
    if (this.turnBegun) return false;
    this.practiceStop = stop;
    return true;
  }

  /**
   * Builds the configured provider ahead of the first turn (the service's warm-up), and has it ask what
   * that turn would wait for (a local server's window, else a connection to the provider's origin, opened
   * ahead: http-provider.ts's preconnect; either way a connection the turn then reuses): the
   * resolver keeps it while provider, endpoint and key stay (provider-resolver.ts), so that turn does
   * not make the SDK's client.
   */
  async warmUpProvider(ended?: AbortSignal): Promise<void> {
    const config = this.deps.config();
    await this.deps.provider(config).warmUp?.(config.model, ended);
  }

  /**
   * The saved prompts of the data directory and of the project: the workspace folders', or, for a
   * conversation in its own worktree, the worktree's (its branch's prompts, what its turns work in).
   */
  savedPrompts(conversationId: string | undefined, source: Source): Promise<SavedPrompt[]> {
    if (conversationId !== undefined) this.requireConversation(conversationId, source);
    const area = conversationId === undefined ? undefined : this.recordedArea(conversationId);
    return listSavedPrompts(area?.roots ?? (this.deps.workspaceRoots ?? (() => []))(), this.deps.dataDir);
  }

  /** One turn; its events reach `onEvent` in the order they happen, before the returned promise settles. */
  async chat(input: ChatInput, onEvent: TurnEventSink = ignore): Promise<ChatOutput> {
    const conversationId = input.conversationId ?? randomUUID();
    const create = !input.conversationId;
    // Checked again when its turn comes (from memory, unless a write since may have changed its owner).
    if (!create) this.checkConversation(conversationId, input.source);
    const worktree = this.worktreeWanted(conversationId, create, input);
    const waitingAs = () => ({ client_message_id: input.clientMessageId ?? null, preview: previewOf(input.message) });
    // Counted in its sender's bound while it waits (worked out only then): its text and context are held until its turn.
    const chars = () => input.message.length + contextChars(input.context ?? []);
    const line = this.waitInLine(conversationId, waitingAs, input.sender ?? sourceText(input.source), chars);
    return line.run(async () => {
      // Made before the conversation is stored: a worktree that cannot be made leaves nothing behind.
      if (create && worktree) await this.makeWorktree(conversationId, titleOf(input.message));
      const area = await this.areaOf(conversationId);
      // In the journal's file before the model is asked (a resend after a crash finds it and nothing
      // runs twice), durable before anything is told, a tool runs or the turn answers (UserCommit): its
      // fdatasync is deferred to the turn's first outward effect, or made by the reply's own commit when
      // the model answers first (one sync for both messages).
      const stored = this.storeUserMessage(conversationId, create, input);
      // Its row (last_message) goes to nobody before the message is durable: then with its own announcement.
      const release = this.deps.activity?.hold(conversationId);
      stored.durable.catch(() => release?.(true));
      // Behind a full disk's owed records it is applied once they are written: the request reads it.
      if (!stored.applied) await stored.durable;
      const commit = new UserCommit<TurnEvent>(
        stored.written,
        stored.durable,
        () => void this.deps.store.db.flush().catch(ignore),
        (turnOver) => {
          const free = release ? release(this.deps.onActivity === undefined) : true;
          if (!turnOver) onEvent({ event: 'chat.message', conversation_id: conversationId, message: stored.message });
          // Another turn's message still holding the conversation: its release announces the row.
          if (free) this.deps.onActivity?.(conversationId, sourceText(input.source));
        },
      );
      // The record's write is handed to the pool before its statements ran (a planned write, when nothing
      // else is in flight) or at the loop's next check phase (the journal's immediate, asked by the append
      // above, runs first); the history cache adds its row there too: the request is built after that,
      // while the record is written.
      if (stored.applied) await new Promise(setImmediate);
      return this.answer(conversationId, input, commit.events(onEvent), stored.message.id, area, commit);
    });
  }

  /**
   * retry_turn: answers the conversation's last user message again, when its turn failed or was
   * cancelled (no reply after it) and no turn runs or waits there: nothing is stored before the model
   * answers, the reply after the message (with any tool rows the failed try left), the turn's usage and
   * files under the message's turn as before. Refused, nothing run: not_found (the conversation, the
   * message), invalid_request (not a user message), conflict (a turn runs; a later message; answered).
   */
  retry(input: RetryInput, onEvent: TurnEventSink = ignore, began: (conversationId: string) => void = ignore): Promise<ChatOutput> {
    const { conversationId, messageId } = input;
    this.checkConversation(conversationId, input.source);
    // Decided in the same tick as the turn takes the conversation's queue: no chat can slip in between.
    if (this.queue.busy(conversationId)) throw new ServiceError('conflict', 'a turn runs in this conversation: retry once it has ended (or stop it first)');
    return this.queued(conversationId, async () => {
      this.checkConversation(conversationId, input.source);
      const message = await this.retried(conversationId, messageId);
      const area = await this.areaOf(conversationId);
      const from = (message.data as { from?: unknown } | null)?.from;
      const sentByOwner = keyIsPersons(message.client_key, OWNER_PERSON);
      if (input.retryKey !== undefined) await this.storeRetryKey(input.retryKey, conversationId, messageId);
      began(conversationId);
      const { conversationId: _c, messageId: _m, retryKey: _k, ownerAnswersPrompts, ...rest } = input;
      const answering: AnswerInput = { ...rest, ownerAnswersPrompts: ownerAnswersPrompts(sentByOwner), ...(typeof from === 'string' ? { from } : {}) };
      // Its failed tries wrote under the same turn: what this one wrote does not say whether the turn did.
      const { filesWritten: _written, ...output } = await this.answer(conversationId, answering, onEvent, message.id, area);
      return output;
    });
  }

  /**
   * A retry's key, so its resend after a crash is answered rather than run again: as a chat's user message
   * (storeUserMessage), in the journal's file before the model is asked (a killed process cannot lose it),
   * its fdatasync deferred to the turn's next commit (a tool round's, before any tool runs, or the reply's):
   * no sync of its own. Behind a full disk's owed records, once durable.
   */
  private async storeRetryKey(retryKey: string, conversationId: string, messageId: string): Promise<void> {
    const { db, retryKeys } = this.deps.store;
    const before = db.lastWrite;
    const durable = retryKeys.remember(retryKey, { conversation_id: conversationId, message_id: messageId }, DEFER_SYNC);
    durable.catch(ignore);
    // As storeUserMessage's: the file's `written` only when this write was applied (it moved the last write by
    // one record); one refused after its record's hand-off has only its own promise to tell (review17d). A
    // write refused (a failed journal) fails the retry before the model is asked.
    const written = (db.lastWrite === before + 1 ? db.written() : undefined) ?? durable;
    await Promise.race([written, durable]);
  }

  /** The message retry_turn may answer again: the conversation's last user message, with no reply. */
  private async retried(conversationId: string, messageId: string): Promise<MessageRow> {
    const { messages } = this.deps.store;
    const message = await messages.get(messageId);
    if (message?.conversation_id !== conversationId) throw new ServiceError('not_found', `message ${messageId} not found in conversation ${conversationId}`);
    if (message.role !== 'user') throw new ServiceError('invalid_request', `message ${messageId} is not a user message: retry_turn answers a user message again`);
    // A webhook's message whose turn failed for a passing reason is still the inbox's: it tries it again
    // after its backoff, and a retry here would answer it twice (review25b). Once failed for good, it may.
    if (this.deps.store.webhooks.getInbox(messageId)?.status === 'pending') {
      throw new ServiceError('conflict', `message ${messageId} came by webhook and is still being tried by its inbox: retry it once that has given up`);
    }
    const rows = await this.history.rows(conversationId);
    const last = rows.findLast((row) => row.role === 'user');
    if (last?.id !== messageId) throw new ServiceError('conflict', `message ${messageId} is not the conversation's last message: only the last one can be retried`);
    if (await messages.replyTo(message)) throw new ServiceError('conflict', `message ${messageId} is already answered`);
    return message;
  }

  /** Whether a new conversation gets a worktree; on an existing one, `worktree` must match it or be absent (else invalid_request). */
  private worktreeWanted(conversationId: string, create: boolean, input: ChatInput): boolean {
    const config = this.deps.config();
    if (!create) {
      const has = this.deps.worktrees?.of(conversationId) !== undefined;
      if (input.worktree !== undefined && input.worktree !== has) {
        throw new ServiceError(
          'invalid_request',
          `worktree is chosen when a conversation starts: this one works in ${has ? 'its own worktree' : 'the workspace'} (leave worktree out, or send ${has})`,
        );
      }
      return has;
    }
    if (input.worktree === false && worktreeRequired(config, input.source)) {
      throw new ServiceError('invalid_request', 'this webhook account\'s conversations always work in their own worktree (its `worktree` is "required")');
    }
    return input.worktree ?? worktreeByDefault(config, input.source);
  }

  private async makeWorktree(conversationId: string, title: string): Promise<void> {
    if (!this.deps.worktrees) throw new ServiceError('conflict', 'this host does not make worktrees');
    await this.deps.worktrees.create(conversationId, title);
  }

  /** Where the conversation's tools work this turn: its worktree (checked: a deleted folder refuses the turn), or the workspace (undefined). */
  private async areaOf(conversationId: string): Promise<ToolArea | undefined> {
    const root = await this.deps.worktrees?.rootOf(conversationId);
    return root === undefined ? undefined : { roots: [root] };
  }

  /** The conversation's area as recorded, unchecked (what it shows between turns: instruction files, compaction's sizing). */
  private recordedArea(conversationId: string): ToolArea | undefined {
    const record = this.deps.worktrees?.of(conversationId);
    return record ? { roots: [record.path] } : undefined;
  }

  /**
   * Answers a message that reached the service another way (the webhook inbox, also after a restart):
   * `admit` puts it into the conversation once its turn comes, then the agent answers it. Behind a
   * running turn it waits visibly as `waitingAs`, like a chat, and may be removed the same way.
   */
  answerAdmitted(
    conversationId: string,
    admission: { mayStart: () => void; admit: () => Promise<void> },
    input: AnswerInput & { waitingAs?: QueuedMessage },
    onEvent: TurnEventSink = ignore,
  ): Promise<ChatOutput> {
    const { waitingAs } = input;
    const line = this.waitInLine(conversationId, waitingAs && (() => waitingAs), sourceText(input.source));
    return line.run(async () => {
      // Before anything is made for it: a message that will not run (over its budget) costs no checkout.
      admission.mayStart();
      // A webhook conversation is stored when its first message is accepted: its worktree is made at its first turn.
      const wanted = !this.deps.worktrees?.of(conversationId) && worktreeByDefault(this.deps.config(), input.source);
      if (wanted && (await this.deps.store.messages.recent(conversationId, { limit: 1 })).length === 0) {
        await this.makeWorktree(conversationId, this.deps.store.conversations.get(conversationId)?.title ?? 'webhook');
      }
      const area = await this.areaOf(conversationId);
      await admission.admit();
      // The admitted message is the conversation's last one (its turn holds the conversation).
      const [admitted] = await this.deps.store.messages.recent(conversationId, { limit: 1 });
      if (admitted?.role === 'user') onEvent({ event: 'chat.message', conversation_id: conversationId, message: messageOf(admitted) });
      this.deps.onActivity?.(conversationId, sourceText(input.source));
      return this.answer(conversationId, input, onEvent, admitted?.role === 'user' ? admitted.id : undefined, area);
    });
  }

  /**
   * A message's place in its conversation's queue. Behind a running turn it waits visibly (listed as
   * `message`), and a client may remove it: then it is answered `cancelled` and `removed` at once and,
   * when its turn comes, nothing is stored or run.
   */
  private waitInLine(conversationId: string, message: (() => QueuedMessage) | undefined, sender: string, chars?: () => number): { run: (turn: () => Promise<ChatOutput>) => Promise<ChatOutput> } {
    let removed = (): void => undefined;
    const removal = new Promise<ChatOutput>((resolve) => {
      removed = () => resolve({ response: '', conversation_id: conversationId, cancelled: true, removed: true });
    });
    const waiting = message ? this.deps.activity?.enqueue(conversationId, message, removed, sender, chars) : undefined;
    return {
      run: (body) => {
        const turn = this.queued(conversationId, () => (waiting && !waiting.start() ? removal : body()));
        return waiting ? Promise.race([turn, removal]) : turn;
      },
    };
  }

  /** A turn in the conversation's queue, counted as `running` from queued to ended. */
  private async queued<T>(conversationId: string, turn: () => Promise<T>): Promise<T> {
    this.turnBegun = true;
    this.practiceStop?.abort();
    this.deps.activity?.turnQueued(conversationId);
    try {
      return await this.queue.run(conversationId, turn);
    } finally {
      this.deps.activity?.turnEnded(conversationId);
    }
  }

  /** The conversation, if it exists and `source` may see it; else not_found. */
  requireConversation(conversationId: string, source: Source) {
    const conversation = this.deps.store.conversations.get(conversationId);
    if (!conversation || !canAccess(source, conversation.source)) throw notFound(conversationId);
    return conversation;
  }

  /**
   * requireConversation's check alone (a chat's, before its turn and again when it comes): only the row's
   * source, kept in memory while no write could have changed it (ConversationsRepo.sourceOf).
   */
  private checkConversation(conversationId: string, source: Source): void {
    const owner = this.deps.store.conversations.sourceOf(conversationId);
    if (owner === undefined || !canAccess(source, owner)) throw notFound(conversationId);
  }

  /**
   * compact_conversation: summarises the conversation's older turns now, keeping `focus` in particular,
   * after any turn that runs (it waits in the conversation's queue). The summary reaches followers as
   * a chat.message; its usage row carries the context fullness the model will see from now on.
   */
  async compact(conversationId: string, source: Source, focus: string | undefined, onEvent: TurnEventSink = ignore): Promise<{ message: Message; context_used: number; context_window: number }> {
    this.requireConversation(conversationId, source);
    return this.queued(conversationId, async () => {
      this.requireConversation(conversationId, source);
      const log = this.deps.logger.child({ conversation: conversationId });
      const area = this.recordedArea(conversationId);
      const { config, model, provider, specs, window } = await this.requestShape({}, false, area);
      const rows = await this.history.rows(conversationId);
      // The next turn's request shape, so the fullness told is what the model will be sent.
      const system = await this.systemMessage(config, rows, {}, { model, contextWindow: window }, area);
      const moment = await this.moment({ client: sourceLabel(source), remote: source.kind !== 'editor' }, area);
      const budget = requestBudget(window, config.max_tokens, fixedMessages(system, moment), specs);
      const usage = new TurnUsage();
      try {
        const made = await this.compactor.compact(rows, compactionCall(conversationId, { config, provider, model }, budget, usage, onEvent), focus);
        const contextUsed = made.historyTokens + budget.fixed;
        usage.contextNow(contextUsed, budget.window);
        await this.recordUsage(usage, made.message.id, conversationId, sourceText(source), log);
        return { message: made.message, context_used: contextUsed, context_window: budget.window };
      } catch (error) {
        if (error instanceof CompactionFailed) throw new ServiceError('server_error', `the conversation could not be compacted: ${error.message}`);
        throw error;
      }
    });
  }

  /** draft_commit_message: a commit message for `diff` from the configured model, in one call without tools (agent/commit-message.ts). */
  async draftCommitMessage(diff: string): Promise<string> {
    const config = this.deps.config();
    try {
      return await draftCommitMessage(this.deps.provider(config), config.model, diff, config.max_tokens ?? 1_000);
    } catch (error) {
      // The provider's own text may quote the request or a key: told as a failure only.
      this.deps.logger.warn('commit_message.failed', { error });
      throw new ServiceError('server_error', 'the model could not draft a commit message (the provider failed or answered nothing): type one');
    }
  }

  /** Resolves when every running turn has finished. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** Conversations with a turn (or another job: a compaction) running or waiting in line: retention spares them (history/maintenance.ts). */
  busyConversations(): string[] {
    return this.queue.keys();
  }

  /** A conversation was deleted: drop what is cached of it. */
  forget(conversationId: string): void {
    this.history.forget(conversationId);
  }

  /**
   * Stores the user message, and a new conversation's row with it (one journal record, its sync deferred:
   * UserCommit): applied at once; `written` once their record is in the journal's file, `durable` once
   * it is fdatasynced (asked by `store.db.flush()` or any later commit). `message` is what its followers
   * are shown.
   */
  private storeUserMessage(conversationId: string, create: boolean, input: ChatInput): { message: Message; applied: boolean; written: Promise<void>; durable: Promise<void> } {
    const { store } = this.deps;
    const now = isoTime();
    let created: Promise<void> | undefined;
    // Applied at once (the message's transaction needs its row), durable with the message: one journal flush.
    if (create) created = store.conversations.create({ id: conversationId, title: titleOf(input.message), source: sourceText(input.source), created_at: now, started_by: input.from }, DEFER_SYNC);
    // Deleted (or made again by another source) while the turn waited in line.
    else this.checkConversation(conversationId, input.source);
    const id = randomUUID();
    const attachments = input.attachments ?? [];
    const message: NewMessage = {
      id,
      conversation_id: conversationId,
      role: 'user',
      content: input.message,
      timestamp: now,
      user_id: input.userId,
      client_key: input.clientKey,
      ...(input.context?.length || attachments.length > 0 || input.from
        ? { data: { ...(input.context?.length ? { context: input.context } : {}), ...(attachments.length > 0 ? { attachments } : {}), ...(input.from ? { from: input.from } : {}) } }
        : {}),
    };
    // One transaction: the attachments become readable to the conversation's viewers with the message that shows them.
    const before = store.db.lastWrite;
    const appended = this.history.stored(
      conversationId,
      [message],
      () =>
        store.messages.appendMany(
          [message],
          bindAttachments(
            packedMap(attachments, (a) => a.attachment_id),
            conversationId,
          ),
          DEFER_SYNC,
        ),
      // Its rows are added at the check phase, after the record's write has started (at once, or the journal's immediate).
      true,
    );
    // Without a conversation made, the message's own promise: two promise hops fewer before it is told.
    const durable = created ? Promise.all([created, appended]).then(ignore) : appended;
    // Asked in the tick of the writes above, so it covers their record. A write not applied (refused, or
    // left for later behind a full disk's owed records) has only its own promise to tell. Applied, its
    // transaction moved the database's last write by one record (nothing else wrote in between: no read
    // needed); a planned write refused after its record's hand-off moved it by two (the record and its
    // void record) and applied nothing (review17d: the model was asked, a reply stored after nothing).
    const applied = store.db.lastWrite === before + 1;
    const written = (applied ? store.db.written() : undefined) ?? durable;
    // Its sender knows it by the id it gave (the stored key holds the sender too: not for clients). `...{}`
    // first: see the reply event's.
    return { message: { ...{}, ...messageOf(message), ...(input.clientMessageId ? { client_message_id: input.clientMessageId } : {}) }, applied, written, durable };
  }

  /**
   * `turnMessageId`: the user message the turn answers, which keeps the turn's usage when no reply is
   * stored; its id also names the turn (what undo_turn undoes).
   */
  private async answer(conversationId: string, input: AnswerInput, onEvent: TurnEventSink, turnMessageId?: string, area?: ToolArea, commit?: UserCommit<TurnEvent>): Promise<ChatOutput> {
    const turnId = turnMessageId ?? randomUUID();
    const { store, logger } = this.deps;
    const log = logger.child({ conversation: conversationId });
    const started = Date.now();
    const usage = new TurnUsage();
    let streamed = '';
    let usageStored = false;
    const files = new TurnFiles(store, conversationId, turnId, () => this.context.filesChanged());
    const instructions: TurnInstructions = {};
    try {
      const said = await this.loop(
        conversationId,
        input,
        log,
        onEvent,
        usage,
        files,
        instructions,
        (delta) => {
          streamed += delta;
          onEvent({ event: 'chat.delta', conversation_id: conversationId, delta });
        },
        area,
        commit,
      );
      // Well-formed as it is stored (messages.ts checkMessage): the answer, the reply's event and a webhook's
      // delivery show what is read back after a restart.
      const text = wellFormed(said);
      const inForce = this.instructionsAfter(conversationId, instructions, files, area);
      // Counted before the reply is stored: the conversation.updated that tells of it shows the new counts.
      if (area) await this.deps.worktrees?.refreshStats(conversationId);
      const messageId = randomUUID();
      // Before the reply: once a webhook sender has the reply, its account's budget already counts it.
      // The usage row goes in the reply's transaction: one durable commit for both.
      usageStored = true;
      const usageRow = usage.empty ? undefined : usage.row(messageId, conversationId, sourceText(input.source), new Date());
      const withUsage = (tx: WriteTx) => usageRow && store.usage.recordIn(tx, usageRow);
      const reply: NewMessage = { id: messageId, conversation_id: conversationId, role: 'assistant', content: text, timestamp: isoTime() };
      // Its commit's fdatasync makes the user message (written before it) durable too; that one is told first.
      // Its statements (and its usage row's) are known: its record's write starts before they run (writePlanned).
      const replied = input.storeReply
        ? input.storeReply(reply, withUsage)
        : this.history.stored(conversationId, [reply], () => store.messages.appendMany([reply], usageRow ? [usageOp(usageRow)] : undefined), true);
      // Its event is made during the commit's wait (below), sent once durable. Its usage is the row just
      // written, not read back: under a new message id it is stored as it is (store/usage.ts recordIn adds
      // only to a row of the same id).
      let replyEvent: TurnEvent | undefined;
      // It and its log line (fields merged, redacted, serialized) while the record is synced: once its write is
      // in the file (Database.written, resolved as its fdatasync is asked; under concurrent turns a batch written
      // alone resolves it before the next batch that will sync it is written), not during the write (the check
      // phase), where work longer than the write's round trip would delay the fdatasync. Without a known
      // write (a full disk owes records): at the check phase. Stamped once durable, with the turn's ms, and
      // held: its file write is made by the logger's next line written or a moment later with the lines held
      // meanwhile (file-logger.ts HELD_LINE_MS), not between the durable point and the answer, nor in the next
      // turns' fdatasync waits.
      let answered: PreparedLine | undefined;
      let over = false;
      const prepare = () => {
        if (over) return;
        replyEvent = replyEventOf(conversationId, reply, usageRow);
        answered = log.prepare?.('info', 'chat.answered', { chars: text.length });
      };
      const inFile = store.db.written();
      if (inFile) inFile.then(prepare, ignore);
      else setImmediate(prepare);
      await replied;
      await commit?.durable();
      over = true;
      onEvent(replyEvent ?? replyEventOf(conversationId, reply, usageRow));
      // Its row goes out at the turn's end, a few ticks on, with the state that end leaves (one event, not two).
      if (this.deps.activity) this.deps.activity.replied(conversationId, sourceText(input.source));
      else this.deps.onActivity?.(conversationId, sourceText(input.source));
      if (answered) answered({ ms: Date.now() - started }, true);
      else log.info('chat.answered', { ms: Date.now() - started, chars: text.length });
      const fingerprint = await inForce;
      return { response: text, conversation_id: conversationId, filesWritten: files.written, ...(fingerprint !== undefined ? { instructions: fingerprint } : {}) };
    } catch (error) {
      // Nothing is answered before the user message is durable; its commit's failure is the turn's. A
      // turn stuck there ends when cancelled (UserCommit.durableOrCancelled).
      await commit?.durableOrCancelled(input.signal);
      if (error instanceof Cancelled || (error instanceof ProviderError && error.kind === 'cancelled')) {
        log.info('chat.cancelled', { ms: Date.now() - started });
        return { response: streamed, conversation_id: conversationId, cancelled: true };
      }
      log.warn('chat.failed', { error, ms: Date.now() - started });
      if (error instanceof ProviderError) throw new ProviderFailure(error);
      throw error;
    } finally {
      if (area && !usageStored) await this.deps.worktrees?.refreshStats(conversationId);
      // A turn that ended without a reply (cancelled, failed after a tool round) spent its tokens all the same.
      if (!usageStored && turnMessageId !== undefined) await this.recordUsage(usage, turnMessageId, conversationId, sourceText(input.source), log);
    }
  }

  /**
   * The instruction files in force once the turn answered, as a fingerprint: its last request's (looked at
   * on that step, for every path touched), unless a write or a command since may have changed one (then
   * looked at again, as list_instructions would); none without the agent's context.
   */
  private async instructionsAfter(conversationId: string, instructions: TurnInstructions, files: TurnFiles, area: ToolArea | undefined): Promise<string | undefined> {
    if (instructions.files === undefined) return undefined;
    if (!files.changed) return this.fingerprints.of(instructions.files);
    try {
      return this.fingerprints.of(await this.context.filesInForce(await this.history.rows(conversationId), this.recordedArea(conversationId)?.roots ?? area?.roots));
    } catch {
      return undefined;
    }
  }

  /**
   * Stores the turn's usage; a failure is logged, not thrown: the reply is stored and answered either way.
   * Returns the stored row (undefined when the turn made no provider call or the write failed).
   */
  private async recordUsage(usage: TurnUsage, messageId: string, conversationId: string, source: string, log: Logger) {
    if (usage.empty) return undefined;
    const row = usage.row(messageId, conversationId, source, new Date());
    try {
      await this.deps.store.usage.record(row);
      return (await this.deps.store.usage.ofMessages([messageId])).get(messageId);
    } catch (error) {
      log.warn('usage.not_recorded', { error });
      return undefined;
    }
  }

  /**
   * What a request to the model is made of besides the history and the system message: the tools
   * offered, the model, and its window (compaction/budget.ts shares it out).
   */
  private async requestShape(input: Pick<AnswerInput, 'model'>, lastStep: boolean, area: ToolArea | undefined) {
    // Read afresh each step: a config change (model, permission_mode, tools) applies to the next step.
    const config = this.deps.config();
    const tools = await this.deps.tools.list(area);
    const offered = this.offer(tools);
    const { names, byName } = offered;
    const specs = lastStep || tools.length === 0 ? undefined : offered.specs;
    const model = input.model ?? config.model;
    const provider = this.deps.provider(config);
    // The server's own figure (asked once per model, bounded: providers/server-window.ts), else the last one a call reported (vscode.lm).
    // A provider without the question is not awaited (a promise hop a step for nothing).
    const asked = provider.contextWindow?.(model).catch(() => undefined);
    const reported = (asked && (await asked)) ?? this.reportedWindows.get(`${provider.name}/${model}`);
    const window = windowOf(config, provider.name, model, reported);
    return { config, tools, names, byName, specs, model, provider, window, reported };
  }

  /**
   * The tools' model names and specs, kept while the registry lists the same tools (its sources keep
   * their Tool objects): every step of every turn offered them, and the budget counted their JSON again.
   * The model names depend on the names alone: a source that makes new Tool objects at every listing
   * (custom tools, an MCP server's, the editor's) keeps them while the names are the same, and with them
   * the conversations' kept request views (RequestViews compares them by identity).
   */
  private offer(tools: Tool[]): { names: ModelToolNames; specs: ToolSpec[]; byName: Map<string, Tool> } {
    const kept = this.offered;
    if (kept && kept.tools.length === tools.length && kept.tools.every((tool, i) => tool === tools[i])) return kept;
    const sameNames = kept && kept.tools.length === tools.length && kept.tools.every((tool, i) => tool.name === tools[i].name);
    const names = sameNames ? kept.names : new ModelToolNames(tools.map((t) => t.name));
    this.offered = { tools, names, specs: tools.map((t) => toolSpec(t, names)), byName: new Map(tools.map((t) => [t.name, t])) };
    return this.offered;
  }

  /**
   * The system message of one request. Each step: an instruction file the last step edited, or a
   * folder it reached, counts at once.
   */
  private async systemMessage(
    config: ServiceConfig,
    rows: readonly MessageRow[],
    instructions: TurnInstructions,
    workplace: { model: string; contextWindow: number | null },
    area: ToolArea | undefined,
  ): Promise<ChatMessage | undefined> {
    if (this.deps.withContext === false) return config.system_prompt ? { role: 'system', content: config.system_prompt } : undefined;
    return this.context.systemMessage(config, rows, workplace, instructions, area?.roots);
  }

  /**
   * The request's messages built from the rows (RequestViews declined): the compactor's view (a summary,
   * cut tool outputs, a compaction), the attachments as the model's input, each message shaped.
   */
  private async longRequest(
    rows: readonly MessageRow[],
    system: ChatMessage | undefined,
    moment: ChatMessage | undefined,
    names: ModelToolNames,
    step: { compaction: CompactionCall; mayCompact: boolean; seesImages: boolean; area: ToolArea | undefined; log: Logger },
    compactionFailed: () => void,
  ): Promise<ChatMessage[]> {
    const { area } = step;
    const view = await this.compactor.modelView(rows, system ? [system] : [], step.compaction, step.mayCompact);
    if (view.compaction === 'failed') compactionFailed();
    const messages = await withAttachments(view.messages, step.seesImages, {
      blobs: this.deps.store.blobs,
      workspaceRoots: area ? () => [...area.roots] : (this.deps.workspaceRoots ?? (() => [])),
      logger: step.log,
    });
    return requestMessages(messages, moment, names);
  }

  /** The turn's note (time, git, who sent it), sent after the conversation; none without the agent's context. */
  private async moment(facts: { client: string; remote: boolean }, area: ToolArea | undefined): Promise<ChatMessage | undefined> {
    return this.deps.withContext === false ? undefined : this.context.moment(facts, area?.roots);
  }

  /** Model calls and tool runs until the model answers; returns the final text. */
  private async loop(
    conversationId: string,
    input: AnswerInput,
    log: Logger,
    onEvent: TurnEventSink,
    usage: TurnUsage,
    files: TurnFiles,
    instructions: TurnInstructions,
    onDelta: (delta: string) => void,
    area: ToolArea | undefined,
    commit: UserCommit<TurnEvent> | undefined,
  ): Promise<string> {
    const { store } = this.deps;
    // Without the caller's, nothing can stop the turn: a signal is made only for a tool's run, which needs one.
    const signal = input.signal;
    let toolSignal: AbortSignal | undefined;
    // One failed compaction a turn: the turn goes on with the cut instead of failing again each step.
    let mayCompact = true;
    // Once a turn: git is asked then, and the date and time are those of the message.
    let moment: ChatMessage | undefined | null = null;
    for (let step = 1; ; step += 1) {
      const maxSteps = this.deps.config().max_steps;
      const lastStep = step >= maxSteps;
      const { config, names, byName, specs, model, provider, window, reported } = await this.requestShape(input, lastStep, area);
      const rows = await this.history.rows(conversationId);
      // Asked together: their cached answers wait for the same check phase (places-watch.ts), one
      // turn of the event loop instead of two.
      const note: Promise<ChatMessage | undefined> =
        moment === null ? this.moment({ client: input.client ?? sourceLabel(input.source), remote: input.source.kind !== 'editor' }, area) : Promise.resolve(moment);
      note.catch(() => undefined); // awaited below; a failed system message must not leave it unhandled
      const system = await this.systemMessage(config, rows, instructions, { model, contextWindow: window }, area);
      moment = await note;
      const budget = requestBudget(window, config.max_tokens, fixedMessages(system, moment), specs);
      // A summary is asked and stored (and told) only after the user message is durable and told.
      const compaction = compactionCall(conversationId, { config, provider, model }, budget, usage, onEvent, signal, commit && (() => commit.durable()));
      // The conversation's view as the last step sent it, extended by the rows stored since; the long
      // way when it may not be sent as it is (a summary, an attachment, over the budget).
      const messages =
        this.views.request(rows, system, moment, { names, readable: moment !== undefined }, budget.history) ??
        (await this.longRequest(rows, system, moment, names, { compaction, mayCompact, seesImages: seesImages(config, model), area, log }, () => (mayCompact = false)));
      // Sent once the user message is in the journal's file (built meanwhile): a process killed from
      // then on keeps it, so a resend finds it and the model is not asked twice.
      await commit?.written;
      const asked = provider.complete({
        model,
        temperature: config.temperature,
        // Never more than the room kept for it: the request and the reply must fit the window together.
        max_tokens: config.max_tokens === undefined ? undefined : budget.reply,
        messages,
        tools: specs,
        signal,
        onDelta: input.stream ? onDelta : undefined,
        onRetry: (wait) => onEvent({ event: 'turn.retrying', conversation_id: conversationId, ...wait }),
      });
      commit?.soon();
      const result = await asked;
      input.answered?.();
      if (result.context_window !== undefined) this.reportedWindows.set(`${provider.name}/${model}`, result.context_window);
      usage.add(config, provider.name, model, result.context_window === undefined && reported !== undefined ? { ...result, context_window: reported } : result);
      if (signal?.aborted) throw new Cancelled();
      if (result.tool_calls.length === 0) return result.text;
      if (lastStep) return result.text || `Stopped after ${maxSteps} steps of tool calls without a final answer.`;

      const batch = randomUUID();
      // The model's id and name made well-formed where they enter (code-points.ts): the permission request's
      // call_id (a column: sql.js's UTF-8), the events and the stored messages then carry the same text. Ids
      // made one by that (or repeated by the provider) are told apart: each result answers its own call.
      const ids = new Set<string>();
      const calls = result.tool_calls.map((call) => ({ ...call, id: uniqueId(ids, wellFormed(call.id)), name: wellFormed(names.toolName(call.name) ?? call.name) }));
      // What the model wrote before calling its tools is an assistant message of its own, stored with the
      // calls (one transaction): the history, exports and search have it; transcriptOf gives it back to
      // the model as the calls' text.
      const said: NewMessage | undefined = result.text ? { id: randomUUID(), conversation_id: conversationId, role: 'assistant', content: result.text, timestamp: isoTime() } : undefined;
      const stored: NewMessage[] = [
        ...(said ? [said] : []),
        ...calls.map((call): NewMessage => ({
          id: randomUUID(),
          conversation_id: conversationId,
          role: 'tool',
          tool_name: call.name,
          content: JSON.stringify(call.arguments),
          timestamp: isoTime(),
          data: { kind: 'call', call_id: call.id, batch, arguments: call.arguments } satisfies ToolCallData,
        })),
      ];
      await this.history.stored(conversationId, stored, () => store.messages.appendMany(stored));
      // The calls' commit made the user message durable too (no sync of its own); no tool runs before it is told.
      await commit?.durable();
      if (said) onEvent({ event: 'chat.message', conversation_id: conversationId, message: messageOf(said) });
      for (const call of calls) {
        onEvent({ event: 'tool.call', conversation_id: conversationId, tool: call.name, call_id: call.id, arguments: call.arguments });
        const outcome = await runToolCall(call, byName.get(call.name), {
          conversationId,
          source: sourceText(input.source),
          from: input.from,
          ownerAnswersPrompts: input.ownerAnswersPrompts === true,
          signal: signal ?? (toolSignal ??= new AbortController().signal),
          gate: this.deps.gate,
          logger: log,
          timeoutMs: this.deps.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
          files,
          onPlan: (plan) => onEvent({ event: 'plan.updated', conversation_id: conversationId, plan }),
        });
        // The image's bytes held from blob collection until the result naming them is stored (blob-guard.ts).
        const { shown, result } = await store.blobs.holding(async (put) => {
          const shown = outcome.image ? await keepImage(put, outcome.image) : undefined;
          const result: NewMessage = {
            id: randomUUID(),
            conversation_id: conversationId,
            role: 'tool',
            tool_name: call.name,
            content: outcome.content,
            timestamp: isoTime(),
            data: {
              kind: 'result',
              call_id: call.id,
              ok: outcome.ok,
              ...(outcome.denied ? { denied: true } : {}),
              ...(shown ? { attachments: [shown] } : {}),
              ...(outcome.detail ? { detail: outcome.detail } : {}),
            } satisfies ToolResultData,
          };
          // The image's record and the result that shows it, in one transaction: neither is ever seen without the other.
          // A webhook account's tool call is recorded in the audit log with its result (untrusted text asked for it).
          const audit = input.source.kind === 'webhook' ? webhookToolRunEntry(input.source.account, conversationId, call.name, outcome) : undefined;
          await this.history.stored(conversationId, [result], () =>
            store.messages.appendMany([result], (tx) => {
              if (shown) insertAttachment(tx, { ...shown, id: shown.attachment_id, uploader: 'agent', created_at: result.timestamp, conversation_id: conversationId });
              if (audit) store.audit.record(tx, audit);
            }),
          );
          return { shown, result };
        });
        onEvent({
          event: 'tool.result',
          conversation_id: conversationId,
          tool: call.name,
          call_id: call.id,
          ok: outcome.ok,
          denied: outcome.denied !== undefined,
          // As stored (well-formed: messages.ts checkMessage).
          content: result.content,
          ...(outcome.detail ? { detail: outcome.detail } : {}),
          ...(shown ? { attachments: [attachmentInfoOf(shown)] } : {}),
        });
        if (signal?.aborted || (outcome.denied && endsTurn(outcome.denied))) throw new Cancelled();
      }
    }
  }
}

/** A webhook account's tool call as the audit log keeps it: the tool, what it acted on, whether it ran. */
function webhookToolRunEntry(account: string, conversationId: string, tool: string, outcome: ToolCallResult): NewAuditEntry {
  const what = outcome.subject !== undefined ? `${tool} ${outcome.subject}` : tool;
  return {
    kind: 'webhook.tool_run',
    person: { kind: 'webhook', name: account },
    place: { via: 'webhook' },
    conversation_id: conversationId,
    summary: outcome.denied ? `Refused ${what}` : `Ran ${what}${outcome.ok ? '' : ' (failed)'}`,
    detail: { tool, subject: outcome.subject ?? null, ran: outcome.denied === undefined, ok: outcome.ok },
  };
}

/** An image a tool showed, stored durably as a blob before the result that references it. */
async function keepImage(put: (bytes: Uint8Array) => Promise<BlobRef>, image: ToolImage): Promise<StoredAttachment> {
  const { hash, size } = await put(image.bytes);
  return { attachment_id: randomUUID(), name: image.name, mime: image.mime, kind: 'image', size, hash };
}

function toolSpec(tool: Tool, names: ModelToolNames): ToolSpec {
  return { name: names.modelName(tool.name), description: tool.description, parameters: tool.inputSchema };
}

/** The reply's `chat.message`. `...{}` first: a hidden class shared by every reply's (the logger's merge, FileLogger.prepare, says why). */
function replyEventOf(conversationId: string, reply: NewMessage, usageRow: UsageRow | undefined): TurnEvent {
  return { event: 'chat.message', conversation_id: conversationId, message: { ...{}, ...messageOf(reply), ...(usageRow ? { usage: messageUsageOf(usageRow) } : {}) } };
}

/** What every request of a turn carries besides the history: counted before the history is fitted. */
function fixedMessages(system: ChatMessage | undefined, moment: ChatMessage | undefined): ChatMessage[] {
  return [system, moment].filter((message): message is ChatMessage => message !== undefined);
}

/** A conversation that does not exist, or that the asker may not see (the same answer for both). */
function notFound(conversationId: string): ServiceError {
  return new ServiceError('not_found', `conversation ${conversationId} not found`);
}

/** `id`, or `id_2`, `id_3`... when `taken` (a step's calls so far) holds it already; added to `taken`. */
function uniqueId(taken: Set<string>, id: string): string {
  let unique = id;
  for (let n = 2; taken.has(unique); n += 1) unique = `${id}_${n}`;
  taken.add(unique);
  return unique;
}
