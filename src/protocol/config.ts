import * as z from 'zod';
import { InstructionFileInfo, SystemPromptMode } from './agent-context';
import { command } from './command-frame';
import { PermissionMode } from './permissions';
import { DEFAULT_PROVIDER, PROVIDER_NAMES } from './providers';
import { Prices, UsageBudget } from './usage';
import { lazySchema } from './lazy-schema';

export const DEFAULT_PORT = 5000;
export const DEFAULT_SESSION_TTL_SECONDS = 3600;
/** A permission request waits this long for an answer (30 minutes): long enough to reach the phone. */
export const DEFAULT_PERMISSION_TIMEOUT_SECONDS = 1800;
export const MIN_AUTH_TOKEN_LENGTH = 32;

/** An `allow_from` pattern: an IPv4 address whose segments may be `*`, an IPv6 address, `*`, or `localhost`. */
export const AllowFromPattern = lazySchema(() =>
  z.string().refine((p) => p === '*' || p === 'localhost' || /^((25[0-5]|2[0-4]\d|1?\d?\d|\*)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d|\*)$/.test(p) || (p.includes(':') && /^[0-9a-fA-F:.*]+$/.test(p)), {
    error: 'expected an IP address pattern such as 192.168.1.* or ::1',
  }),
);

// Channel entries are strict: a typo such as "allow_fron" is named, not silently ignored.
export const TcpChannel = lazySchema(() =>
  z.strictObject({
    name: z.string().min(1),
    type: z.literal('tcp'),
    port: z.number().int().min(0).max(65535).default(DEFAULT_PORT),
    allow_from: z.array(AllowFromPattern).default(['127.0.0.1', '::1']),
  }),
);
export type TcpChannel = z.infer<typeof TcpChannel>;

export const WebsocketChannel = lazySchema(() =>
  z.strictObject({
    name: z.string().min(1),
    type: z.literal('websocket'),
    url: z.url({ protocol: /^wss?$/, error: 'expected a ws:// or wss:// URL' }),
    auth_token: z.string().min(MIN_AUTH_TOKEN_LENGTH, { error: `must be at least ${MIN_AUTH_TOKEN_LENGTH} characters` }),
  }),
);
export type WebsocketChannel = z.infer<typeof WebsocketChannel>;

export const MIN_WEBHOOK_SECRET_LENGTH = 16;

export const WebhookAccount = lazySchema(() =>
  z.strictObject({
    incoming_path: z.string().regex(/^\/[^\s?#]*$/, { error: 'expected a URL path starting with /' }),
    outgoing_url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }),
    secret: z
      .string()
      .min(MIN_WEBHOOK_SECRET_LENGTH, { error: `must be at least ${MIN_WEBHOOK_SECRET_LENGTH} characters` })
      .optional(),
    model: z.string().min(1).optional(),
    retry_for_seconds: z.number().int().positive().optional(),
    /**
     * Whether tools may run during this account's turns (webhook text is untrusted): `deny` (the default),
     * `ask` or `allow`, in place of permission_mode. Opting in needs a secret (checked below).
     */
    tools: PermissionMode.optional(),
    /** A daily budget: once this UTC day's usage reaches it, the account's next messages get an error callback (budget_exceeded). */
    budget: UsageBudget.optional(),
    /** `required`: each of this account's conversations works in its own git worktree (docs/protocol.md, "Worktrees"). */
    worktree: z.literal('required').optional(),
  }),
);
export type WebhookAccount = z.infer<typeof WebhookAccount>;

export const WebhookChannel = lazySchema(() =>
  z.strictObject({
    name: z.string().min(1),
    type: z.literal('webhook'),
    accounts: z.record(z.string().min(1), WebhookAccount).default({}),
  }),
);

export const ChannelEntry = lazySchema(() => z.discriminatedUnion('type', [TcpChannel, WebsocketChannel, WebhookChannel]));

/**
 * `channels` in either form (docs/protocol.md): an array of entries, or an object keyed by name whose
 * `webhook` key may omit `type`. The object form is rewritten into the array form before validation.
 */
export const Channels = lazySchema(() =>
  z.preprocess((value) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    return Object.entries(value as Record<string, unknown>).map(([name, entry]) => {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return entry;
      const typed = entry as Record<string, unknown>;
      return { name, ...(name === 'webhook' && typed.type === undefined ? { type: 'webhook' } : {}), ...typed };
    });
  }, z.array(ChannelEntry)),
);

export const UserEntry = lazySchema(() =>
  z.object({
    username: z.string().min(1),
    password_hash: z.string().min(1),
  }),
);

export const CustomToolParamType = lazySchema(() => z.enum(['string', 'number', 'boolean']));
/**
 * A parameter: its type, or `{type, allow_options}`. `allow_options: true` lets a value starting with
 * `-` stand where the program reads options (refused otherwise, so `-o/file` cannot become one).
 */
export const CustomToolParam = lazySchema(() => z.union([CustomToolParamType, z.strictObject({ type: CustomToolParamType, allow_options: z.boolean().default(false) })]));
export const CustomTool = lazySchema(() =>
  z.object({
    name: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/),
    description: z.string().default(''),
    parameters: z.record(z.string(), CustomToolParam).default({}),
    command: z.array(z.string()).min(1),
    timeout_seconds: z.number().positive().optional(),
  }),
);

export const McpServer = lazySchema(() =>
  z.object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
  }),
);

/** Exactly the registered providers (src/protocol/providers.ts). */
export const ProviderName = lazySchema(() => z.enum(PROVIDER_NAMES));
export type ProviderName = z.infer<typeof ProviderName>;

export const MAX_PERMISSION_RULES = 500;
export const MAX_PERMISSION_RULE_LENGTH = 2000;

/** What may stand before a rule's `:`: a tool name (`run_command`, `calc.add`) or a glob of them (`calc.*`). */
const TOOL_NAME_GLOB = /^[A-Za-z0-9_.\-/*]+$/;

/** The tool part of a rule: all of it, or what comes before the first `:`. */
export function toolPartOf(rule: string): string {
  const colon = rule.indexOf(':');
  return colon < 0 ? rule : rule.slice(0, colon);
}

// Messages name the rule by its place (permission_rules.allow.3), not by quoting it: a command rule may hold
// anything, and config errors are logged.
export const PermissionRule = lazySchema(() =>
  z
    .string({ error: 'expected a string' })
    .min(1, { error: 'a rule must not be empty' })
    .max(MAX_PERMISSION_RULE_LENGTH, { error: `a rule may be at most ${MAX_PERMISSION_RULE_LENGTH} characters` })
    .refine((rule) => TOOL_NAME_GLOB.test(toolPartOf(rule)), {
      error: 'the part before ":" must be a tool name or a glob of tool names (letters, digits, _ - . / and *), such as run_command or calc.*',
    }),
);

const permissionRuleCountLimit = (rules: { allow: string[]; deny: string[] }) => rules.allow.length + rules.deny.length <= MAX_PERMISSION_RULES;
const permissionRuleCountError = { error: `at most ${MAX_PERMISSION_RULES} rules (allow and deny together)` };

/** `permission_rules` as update_config writes it: the whole object, both lists, nothing else. */
export const PermissionRules = lazySchema(() => z.strictObject({ allow: z.array(PermissionRule), deny: z.array(PermissionRule) }).refine(permissionRuleCountLimit, permissionRuleCountError));
export type PermissionRules = z.infer<typeof PermissionRules>;

/** The longest a permission request may wait (30 days): a turn is held that long at most, and every expiry stays a valid date. */
export const MAX_PERMISSION_TIMEOUT_SECONDS = 30 * 24 * 3600;

/** Seconds a permission request waits for an answer before the tool is denied. */
export const PermissionTimeoutSeconds = lazySchema(() =>
  z
    .number({ error: 'expected a whole number of seconds' })
    .int({ error: 'expected a whole number of seconds' })
    .min(1, { error: 'must be at least 1' })
    .max(MAX_PERMISSION_TIMEOUT_SECONDS, { error: `must be at most ${MAX_PERMISSION_TIMEOUT_SECONDS} (30 days)` }),
);

const wholePositive = (what: string) =>
  z
    .number({ error: `expected a whole number of ${what}` })
    .int({ error: `expected a whole number of ${what}` })
    .min(1, { error: 'must be at least 1' });

/** Retention of the stored history (docs/protocol.md, "History"); every limit off unless set. */
export const HistorySettings = lazySchema(() =>
  z.strictObject({
    /** Conversations with no activity for this many days are deleted. */
    max_days: wholePositive('days').optional(),
    /** The oldest conversations are deleted while the history holds more (message bytes). */
    max_bytes: wholePositive('bytes').min(1_000_000, { error: 'must be at least 1000000 (1 MB)' }).optional(),
    /** Tool outputs older than this many days are cut to their beginning and a note. */
    tool_output_days: wholePositive('days').optional(),
  }),
);
export type HistorySettings = z.infer<typeof HistorySettings>;

/**
 * Runs in their own git worktree (docs/protocol.md, "Worktrees"): whether a new conversation gets one when
 * its `chat` does not say, per source (all false: conversations work in the workspace, as before), and
 * the folder worktrees are made in (default: `<repository's parent>/<repository's name>.worktrees/`).
 */
export const WorktreeSettings = lazySchema(() =>
  z.strictObject({
    default: z
      .strictObject({
        editor: z.boolean().default(false),
        lan: z.boolean().default(false),
        relay: z.boolean().default(false),
        webhook: z.boolean().default(false),
      })
      .default({ editor: false, lan: false, relay: false, webhook: false }),
    folder: z.string().min(1).optional(),
    /** The repository's hooks run on commit, land and push (never on anything else the service runs); off: none runs. */
    allow_hooks: z.boolean({ error: 'allow_hooks must be true or false' }).default(false),
  }),
);
export type WorktreeSettings = z.infer<typeof WorktreeSettings>;

/** The audit log's retention (docs/protocol.md, "Audit log"), apart from the history's. */
export const AuditSettings = lazySchema(() =>
  z.strictObject({
    /** Entries older than this many days are dropped, oldest first. */
    max_days: wholePositive('days').default(90),
  }),
);
export type AuditSettings = z.infer<typeof AuditSettings>;

/** Settings `update_config` may write (docs/protocol.md). Strict: an unknown field is named and refused. */
export const WritableConfig = lazySchema(() =>
  z
    .strictObject({
      provider: ProviderName,
      model: z.string().min(1),
      temperature: z.number().min(0).max(2),
      permission_mode: PermissionMode,
      base_url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }).nullable(),
      api_key: z.string().min(1).nullable(),
      max_tokens: z.number().int().positive().nullable(),
      system_prompt: z.string().nullable(),
      system_prompt_mode: SystemPromptMode,
      permission_rules: PermissionRules,
      permission_timeout_seconds: PermissionTimeoutSeconds,
    })
    .partial(),
);
export type WritableConfig = z.infer<typeof WritableConfig>;
/** update_config's fields (a function: reading them builds WritableConfig, which a start does not need). */
export const writableConfigFields = () => Object.keys(WritableConfig.shape) as (keyof WritableConfig)[];

/** service.json. Unknown top-level fields are kept (looseObject) so a write never loses them. */
export const ServiceConfigFile = lazySchema(() =>
  z
    .looseObject({
      provider: ProviderName.default(DEFAULT_PROVIDER),
      api_key: z.string().optional(),
      model: z.string().min(1).default('gpt-4o-mini'),
      temperature: z.number().min(0).max(2).default(0.7),
      permission_mode: PermissionMode.default('ask'),
      base_url: z.url({ protocol: /^https?$/ }).optional(),
      max_tokens: z.number().int().positive().optional(),
      system_prompt: z.string().optional(),
      /** `add`: system_prompt follows the built-in prompt (src/agent/prompt); `replace`: it is the whole system prompt. */
      system_prompt_mode: SystemPromptMode.default('add'),
      auth_token: z
        .string()
        .min(MIN_AUTH_TOKEN_LENGTH, { error: `must be at least ${MIN_AUTH_TOKEN_LENGTH} characters` })
        .optional(),
      session_ttl_seconds: z.number().int().positive().default(DEFAULT_SESSION_TTL_SECONDS),
      users: z.array(UserEntry).default([]),
      channels: Channels.default([]),
      workspace: z.string().optional(),
      max_steps: z.number().int().positive().default(20),
      tools: z.array(CustomTool).default([]),
      mcp_servers: z.record(z.string(), McpServer).default({}),
      // A hand-written file may leave a list out; each rule is checked as update_config checks it.
      permission_rules: z
        .object({ allow: z.array(PermissionRule).default([]), deny: z.array(PermissionRule).default([]) })
        .refine(permissionRuleCountLimit, permissionRuleCountError)
        .default({ allow: [], deny: [] }),
      permission_timeout_seconds: PermissionTimeoutSeconds.default(DEFAULT_PERMISSION_TIMEOUT_SECONDS),
      /** Prices per million tokens, over the shipped defaults (agent/usage/prices.ts). */
      prices: Prices.default({}),
      /** Model name -> whether it takes image input, over the known list (agent/attachments/vision.ts). */
      vision_models: z.record(z.string(), z.boolean()).default({}),
      history: HistorySettings.default({}),
      audit: AuditSettings.default({ max_days: 90 }),
      worktrees: WorktreeSettings.default({ default: { editor: false, lan: false, relay: false, webhook: false }, allow_hooks: false }),
    })
    .superRefine((config, ctx) => {
      const tcp = config.channels.filter((c) => c.type === 'tcp');
      if (tcp.length > 1) ctx.addIssue({ code: 'custom', path: ['channels'], message: 'at most one tcp channel' });
      const names = new Set<string>();
      const paths = new Set<string>();
      for (const channel of config.channels) {
        if (names.has(channel.name)) ctx.addIssue({ code: 'custom', path: ['channels'], message: `duplicate channel name ${channel.name}` });
        names.add(channel.name);
        if (channel.type !== 'webhook') continue;
        for (const [account, settings] of Object.entries(channel.accounts)) {
          if (paths.has(settings.incoming_path)) {
            ctx.addIssue({ code: 'custom', path: ['channels', channel.name, 'accounts', account, 'incoming_path'], message: `duplicate incoming_path ${settings.incoming_path}` });
          }
          paths.add(settings.incoming_path);
          if (settings.tools !== undefined && settings.tools !== 'deny' && !settings.secret) {
            ctx.addIssue({
              code: 'custom',
              path: ['channels', channel.name, 'accounts', account, 'tools'],
              message: `"${settings.tools}" needs a secret: anyone who can reach an account without one could run tools`,
            });
          }
        }
      }
    }),
);
export type ServiceConfig = z.infer<typeof ServiceConfigFile>;
export type ChannelEntry = z.infer<typeof ChannelEntry>;

/** The tcp channel in force: the configured one, or loopback-only on the default port. */
/** One object, so its `allow_from` stays the same array and a compiled filter of it is kept (service.ts). */
const LOOPBACK_CHANNEL: TcpChannel = { name: 'local', type: 'tcp', port: DEFAULT_PORT, allow_from: ['127.0.0.1', '::1'] };

export function tcpChannelOf(config: ServiceConfig): TcpChannel {
  // A loop, not find() and its callback: every event to every LAN socket re-checks the address against
  // this channel's allow_from (service.ts), and the callback was a new closure each time, a seventh of
  // what a fan-out to 100 followers allocated (docs/design.md, "Followers' p99 in every run (s13, follow13)").
  const channels = config.channels;
  for (let i = 0; i < channels.length; i += 1) {
    const channel = channels[i]!;
    if (channel.type === 'tcp') return channel;
  }
  return LOOPBACK_CHANNEL;
}

export function websocketChannelsOf(config: ServiceConfig): WebsocketChannel[] {
  return config.channels.filter((c): c is WebsocketChannel => c.type === 'websocket');
}

/** Every webhook account of every webhook channel, keyed by account name. */
export function webhookAccountsOf(config: Pick<ServiceConfig, 'channels'>): Map<string, WebhookAccount> {
  const accounts = new Map<string, WebhookAccount>();
  for (const channel of config.channels) {
    if (channel.type === 'webhook') for (const [name, account] of Object.entries(channel.accounts)) accounts.set(name, account);
  }
  return accounts;
}

// ---- Reading and changing it over the protocol (docs/protocol.md, "get_config", "update_config") ----

export const GetConfigCommand = lazySchema(() => command('get_config', {}));

/** Keys that reach or replace an object's prototype when copied: never a setting's name. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Paths (at any depth) of prototype keys in a parsed JSON value. */
function prototypeKeyPaths(value: unknown, path: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [];
  return Object.keys(value).flatMap((key) => {
    const here = [...path, key];
    return PROTOTYPE_KEYS.has(key) ? [here] : prototypeKeyPaths((value as Record<string, unknown>)[key], here);
  });
}

export const UpdateConfigCommand = lazySchema(() =>
  command('update_config', {
    // Checked on the value as received: copying it into a record would turn "__proto__" into its prototype, silently.
    config: z
      .unknown()
      .superRefine((value, ctx) => {
        for (const path of prototypeKeyPaths(value)) ctx.addIssue({ code: 'custom', path, message: 'not a setting (a prototype key)' });
      })
      .pipe(z.record(z.string(), z.unknown(), { error: 'config must be an object' })),
  }),
);

/** What get_config answers: never a secret (docs/protocol.md). */
export const PublicConfig = lazySchema(() =>
  z.object({
    provider: z.string(),
    model: z.string(),
    temperature: z.number(),
    permission_mode: PermissionMode,
    base_url: z.string().nullable(),
    api_key_set: z.boolean(),
    permission_rules: z.object({ allow: z.array(z.string()), deny: z.array(z.string()) }),
    permission_timeout_seconds: z.number().int(),
    /** How service.json's system_prompt joins the built-in one (`add` or `replace`); the prompts' text is not sent. */
    system_prompt_mode: SystemPromptMode,
    /** The instruction files every conversation is given (the user's and the workspace roots'); list_instructions adds a conversation's nested ones. */
    instructions: z.array(InstructionFileInfo).optional(),
    /** service.json's `worktrees` (docs/protocol.md, "Worktrees"), and whether a new chat from the asking client gets one when it does not say. */
    worktrees: z
      .object({
        default: z.object({ editor: z.boolean(), lan: z.boolean(), relay: z.boolean(), webhook: z.boolean() }),
        /** The folder worktrees are made in as configured; null: the default, `<repository>.worktrees/` beside the repository. */
        folder: z.string().nullable(),
        allow_hooks: z.boolean(),
        /** This client's source's default (a webhook account's `"worktree": "required"` included): where a new chat's toggle starts. */
        new_chat: z.boolean(),
      })
      .optional(),
  }),
);
export type PublicConfig = z.infer<typeof PublicConfig>;

export const ConfigResults = lazySchema(() => ({
  get_config: PublicConfig,
  update_config: z.object({ updated_fields: z.array(z.string()) }),
}));

export const ConfigChangedEvent = lazySchema(() =>
  z.object({
    event: z.literal('config.changed'),
    fields: z.array(z.string()),
  }),
);
