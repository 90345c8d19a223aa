import { parseShellLine } from './tools/shell-line';
import type { AuditActor, PermissionDecision, PermissionMode, PermissionResolution, ServiceConfig } from '../protocol';
import { PermissionRule, toolPartOf } from '../protocol/config';
import type { ToolPreview } from './tools/types';
import { untrustedToolMode } from './untrusted-source';

export interface PermissionQuestion {
  conversationId: string;
  /** Source of the chat (`ws`, `editor`, `webhook:<account>`...). */
  source: string;
  /** Who sent the turn's message, as people read it (a paired device's name, a password user's, `editor`). */
  from?: string;
  /** Only the owner may answer this question (the turn is a session user's). */
  ownerAnswersPrompts?: boolean;
  tool: string;
  arguments: Record<string, unknown>;
  /** What rules match after `<tool>:`, e.g. the command line of run_command. */
  subject?: string;
  /**
   * The tool judges its calls by a subject but this call gives none (arguments it will refuse, such as
   * run_command's `command: []`): `allow_always` then adds no rule, since `<tool>` would allow every call.
   */
  subjectMissing?: boolean;
  /** What the call would do (the tool's preview), worked out only when a person is asked. */
  preview?: () => Promise<ToolPreview>;
  /** The model's id of the tool call, so a restart can store the call's denied result. */
  callId?: string;
  signal: AbortSignal;
}

/** A question put to people: the rule their `allow_always` adds rides along, computed once by the gate (alwaysRuleFor). */
export type PermissionPrompt = PermissionQuestion & { ruleIfAlways?: string };

/**
 * How a tool call's permission was settled: the one shape from the broker (a person's answer, or why
 * none came) through the gate (which settles most calls without asking) to the tool runner (which runs
 * the call, or gives the model `refusalText` of it). The call runs unless `decision` is `deny`.
 */
export interface PermissionOutcome {
  /** The decision in force, as the wire names it (`deny` unless someone or something allowed the call). */
  decision: PermissionDecision;
  /**
   * What settled it. Without asking: the untrusted source's policy (`source`), a rule, the mode, an
   * earlier `allow_conversation` (`conversation`). Asked (the wire's `reason`): a person (`answered`),
   * nobody in time (`expired`), the chat's cancel (`cancelled`), the service's stop (`restarted`).
   */
  reason: 'source' | 'rule' | 'mode' | 'conversation' | PermissionResolution;
  /** `rule` with `deny`: the deny rule that refused the call (named to the model and the person). */
  rule?: string;
  /** `answered`: who, as people read it (commands/audit-actor.ts `sessionLabel`). */
  decidedBy?: string;
  /** `answered` with `deny`: the person's words for the model. */
  note?: string;
  /** `answered` with `allow_always`: the rule it adds (the prompt's `ruleIfAlways`). */
  ruleAdded?: string;
  /** `answered`: who and where, for the audit log; a rule `allow_always` adds is recorded as theirs. */
  actor?: AuditActor;
  /** `expired`: how long it waited. */
  waitedMs?: number;
}

/** The service stopped while the call waited: the turn ends once the call's result is stored. */
export function endsTurn(outcome: PermissionOutcome): boolean {
  return outcome.reason === 'restarted';
}

/** Asks a person; resolves with how the question was settled (implementations deny on timeout). */
export type AskPermission = (prompt: PermissionPrompt) => Promise<PermissionOutcome>;

/** Writes an allow rule where the config lives (service.json), as `by`'s change; resolves once written, or once the failure is logged. */
export type AddAllowRule = (rule: string, by?: AuditActor) => Promise<void>;

/** What the gate reads of service.json, afresh at each call (`channels`: the webhook accounts' `tools`). */
export type GateConfig = Pick<ServiceConfig, 'permission_mode' | 'permission_rules'> & Partial<Pick<ServiceConfig, 'channels'>>;

/** A permission rule's glob, ready to test texts (ruleGlob). */
interface RuleGlob {
  test(text: string): boolean;
}

/**
 * A rule's glob: `*` matches anything (newlines too), `\*` a star itself (so a rule can name `ls *.ts`
 * exactly); every other character, a backslash before anything else included, only itself. Matched as its
 * literal pieces between stars, the first at the start, the last at the end and the others found in order
 * in between: linear in the text. As a regular expression (`.*` a star) a rule of k stars took O(n^k) on a
 * model's long command line or path that nearly matched (test/agent/permission-rules.test.ts's attack).
 * Not tools/glob.ts's path globs (`**`, `?`, classes, braces), a different language.
 */
function ruleGlob(glob: string): RuleGlob {
  const pieces = [''];
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === '\\' && glob[i + 1] === '*') {
      pieces[pieces.length - 1] += '*';
      i++;
    } else if (glob[i] === '*') pieces.push('');
    else pieces[pieces.length - 1] += glob[i];
  }
  return { test: (text) => piecesMatch(pieces, text) };
}

function piecesMatch(pieces: readonly string[], text: string): boolean {
  const first = pieces[0];
  if (pieces.length === 1) return text === first;
  const last = pieces[pieces.length - 1];
  const end = text.length - last.length;
  if (end < first.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let at = first.length;
  // Leftmost is enough: a later place for a piece leaves less room, never more, for the pieces after it.
  for (let i = 1; i < pieces.length - 1; i++) {
    const found = text.indexOf(pieces[i], at);
    if (found < 0 || found + pieces[i].length > end) return false;
    at = found + pieces[i].length;
  }
  return true;
}

/** Text a rule's glob matches only as written: each star escaped (`ruleGlob` reads it back). */
function escapeGlob(text: string): string {
  return text.replace(/\*/g, '\\*');
}

/** Tools whose subject is a shell command line, matched command by command (see `commandRuleMatches`). */
const SHELL_SUBJECT_TOOLS = new Set(['run_command']);

export type RuleEffect = 'allow' | 'deny';

/**
 * A rule's subject pattern against a shell line. An allow rule matches only a line of the same shape:
 * `git status*` matches `git status -s` but not `git status; id > f`, since the line holds operators
 * the rule does not (each simple command is matched against the rule's command at the same place, so
 * a `*` never reaches across an operator). A deny rule matches the line as written, or any simple
 * command in it, even one inside `$(...)`: `rm *` denies `x; rm -rf /` and `echo $(rm -rf /)`.
 */
/**
 * What the Windows shells read where /bin/sh does not: cmd.exe (run_command's shell there) takes `&`,
 * `|`, `<`, `>`, `(`, `)` even inside `'...'` (no quote to it) or after `\` (no escape), `^` escapes,
 * `%...%` and `!...!` expand; PowerShell (the editor's usual terminal) runs the expressions of
 * `@{...}` and `(...)`. The line is cut the POSIX way, so on Windows an allow rule matches only a
 * line free of them (any other falls to permission_mode).
 */
const WINDOWS_SHELL_SPECIAL = /[&|<>()^%!'\\@{}\r\n]/;

function commandRuleMatches(pattern: string, line: string, effect: RuleEffect, platform: NodeJS.Platform): boolean {
  if (effect === 'allow' && platform === 'win32' && WINDOWS_SHELL_SPECIAL.test(line)) return false;
  const parsed = parseShellLine(line);
  const rule = parseShellLine(pattern);
  // Each command of the rule against the line's at the same place: after quote removal (`"git" status`
  // is `git status`), or as written (a rule made by allow_always from this very line, quotes and all).
  // Only blanks between words are evened out: whitespace inside a word is part of it (`'a  b'`, NBSP).
  const sameShape =
    parsed.complete &&
    rule.shape.length === parsed.shape.length &&
    rule.shape.every((part, i) => part === parsed.shape[i]) &&
    rule.commands.every((command, i) => ruleGlob(command.spaced).test(parsed.commands[i].normalized) || ruleGlob(command.spaced).test(parsed.commands[i].spaced));
  if (sameShape) return true;
  if (effect === 'allow') return false;
  const glob = ruleGlob(pattern);
  return glob.test(line) || parsed.commands.some((command) => glob.test(command.raw) || glob.test(command.normalized) || glob.test(command.program));
}

/**
 * `read_file` matches the tool; `run_command:git status*` matches the tool and its subject. Deny rules
 * are read at least as broadly as allow rules: a line an allow rule would not match may still be denied.
 */
export function ruleMatches(rule: string, tool: string, subject: string | undefined, effect: RuleEffect, platform: NodeJS.Platform = process.platform): boolean {
  const colon = rule.indexOf(':');
  if (!ruleGlob(toolPartOf(rule)).test(tool)) return false;
  if (colon < 0) return true;
  if (subject === undefined) return false;
  const pattern = rule.slice(colon + 1);
  if (SHELL_SUBJECT_TOOLS.has(tool)) return commandRuleMatches(pattern, subject, effect, platform);
  return ruleGlob(pattern).test(subject);
}

/**
 * The rule `allow_always` adds: the narrowest that allows this call, `<tool>:<subject>` with the subject's
 * stars escaped (for run_command the command line as written, so its shape and words must match), or
 * `<tool>` for a tool without a subject. Undefined when no valid rule would match the call (an
 * unterminated quote, a line cmd.exe reads otherwise, over the length limit): the call is then allowed once.
 */
export function narrowestRule(tool: string, subject: string | undefined, platform: NodeJS.Platform = process.platform): string | undefined {
  if (tool.includes(':') || tool.includes('*')) return undefined;
  const rule = subject === undefined ? tool : `${tool}:${escapeGlob(subject)}`;
  if (!PermissionRule.safeParse(rule).success) return undefined;
  return ruleMatches(rule, tool, subject, 'allow', platform) ? rule : undefined;
}

/** The rule `allow_always` adds for this call (narrowestRule), or none when the call gives no subject its tool needs. */
export function alwaysRuleFor(question: Pick<PermissionQuestion, 'tool' | 'subject' | 'subjectMissing'>): string | undefined {
  return question.subjectMissing ? undefined : narrowestRule(question.tool, question.subject);
}

/**
 * Whether a tool call may run: deny rules, then allow rules, then `permission_mode` read afresh at each
 * call (so a change applies to the next call, even inside a running chat); in `ask` mode, a tool the
 * user allowed for the conversation runs, otherwise a person is asked. A person's `allow_always` adds
 * the narrowest allow rule for the call (`alwaysRuleFor`, computed once: the prompt names that rule).
 *
 * A call whose context holds untrusted text gets its mode from the source's policy (untrusted-source.ts,
 * given the conversation's source): `deny` (a webhook account that has not opted in) is final, before
 * any rule is read, since rules written for the user's own chats must not let untrusted text run a tool;
 * another mode replaces `permission_mode`, except that `permission_mode: "deny"` still stops everything.
 */
export class PermissionGate {
  private readonly conversationAllowed = new Set<string>();

  constructor(
    private readonly config: () => GateConfig,
    private readonly ask: AskPermission,
    /** The source of a conversation (the store's row), for the untrusted-source policy. */
    private readonly conversationSource: (conversationId: string) => string | undefined = () => undefined,
    /** Adds an allow rule to service.json (through the config file); never throws (it logs a failure). */
    private readonly addAllowRule: AddAllowRule = async () => {},
  ) {}

  async check(question: PermissionQuestion): Promise<PermissionOutcome> {
    const config = this.config();
    const { permission_rules: rules, permission_mode: globalMode } = config;
    const untrusted = untrustedToolMode(config, question.source, this.conversationSource(question.conversationId));
    if (untrusted === 'deny') return { decision: 'deny', reason: 'source' };
    const mode = untrusted === undefined || globalMode === 'deny' ? globalMode : untrusted;
    // The rule is named to the model and the person: a rule's deny is not a person's.
    const denyRule = rules.deny.find((rule) => ruleMatches(rule, question.tool, question.subject, 'deny'));
    if (denyRule !== undefined) return { decision: 'deny', reason: 'rule', rule: denyRule };
    if (rules.allow.some((rule) => ruleMatches(rule, question.tool, question.subject, 'allow'))) return { decision: 'allow', reason: 'rule' };
    return this.byMode(mode, question);
  }

  /** Forgets what was allowed for a conversation (it was deleted). */
  forget(conversationId: string): void {
    for (const key of this.conversationAllowed) if (key.startsWith(`${conversationId}\u0000`)) this.conversationAllowed.delete(key);
  }

  private async byMode(mode: PermissionMode, question: PermissionQuestion): Promise<PermissionOutcome> {
    if (mode === 'allow') return { decision: 'allow', reason: 'mode' };
    if (mode === 'deny') return { decision: 'deny', reason: 'mode' };
    // What the owner allowed for the conversation in its own turns does not carry over to a session
    // user's turns (and the reverse): those are remembered apart.
    const key = `${question.conversationId}\u0000${question.tool}${question.ownerAnswersPrompts ? '\u0000user' : ''}`;
    if (this.conversationAllowed.has(key)) return { decision: 'allow', reason: 'conversation' };
    const ruleIfAlways = alwaysRuleFor(question);
    const outcome = await this.ask({ ...question, ...(ruleIfAlways !== undefined ? { ruleIfAlways } : {}) });
    if (outcome.decision === 'allow_conversation') this.conversationAllowed.add(key);
    // Written before the call runs, so a crash during the call still leaves the rule the user chose.
    if (outcome.decision === 'allow_always' && ruleIfAlways !== undefined) await this.addAllowRule(ruleIfAlways, outcome.actor);
    return outcome;
  }
}
