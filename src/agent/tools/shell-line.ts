import { quoteArg } from './command-line';

/**
 * A POSIX shell line cut into what permission rules judge: its simple commands, and the operators
 * between them (`;`, `&&`, `|`, redirections, `$(`, backticks, subshells, expansions...).
 *
 * Not a full shell parser, and it does not need to be: it only has to see every place where the shell
 * would do more than run one program with literal words. Whatever it is unsure of (an unterminated
 * quote, a `$`, a comment, a `!` an interactive shell would expand from its history) becomes an
 * operator, so an allow rule refuses it; every command inside a substitution or subshell is still
 * listed, so a deny rule sees it.
 */

export interface SimpleCommand {
  /** The command as written (quotes and escapes kept). */
  raw: string;
  /**
   * Its words as written, one space between them: only the blanks the shell splits words on are made one,
   * never whitespace inside a word (quoted, or a character such as NBSP it does not split on).
   */
  spaced: string;
  /** Its words as the program would receive them (quotes removed). */
  words: string[];
  /**
   * Its words as the program would receive them, quoted again only where needed: `"git" 'st'` reads
   * `git st`. What the shell itself would still read (an unquoted `*`, `?`, `[`, `{`, `~`...) is left
   * unquoted, so `ls *.ts` (a glob) and `ls '*.ts'` (a name) stay apart.
   */
  normalized: string;
  /**
   * `normalized` without what may stand before the program: reserved words (`if`, `then`, `{`, `!`...)
   * and variable assignments (`X=1`). `if true; then rm -rf /; fi` holds `rm -rf /` here.
   */
  program: string;
}

export interface ShellLine {
  /** Every simple command, in order, including those inside substitutions, subshells and `${...}`. */
  commands: SimpleCommand[];
  /** The line's shape: `W` for each simple command, and each operator in place (a variable's `$name` and a comment's text whole). */
  shape: string[];
  /** False when a quote, substitution or subshell is left open. */
  complete: boolean;
}

/** A word, and where in its value the characters the shell reads unquoted stand (see `renderWord`). */
type Token = { op: string } | { word: string; start: number; end: number; active: number[] };

/** Characters that mean only themselves to the shell, unquoted (as `quoteArg` leaves them). */
const PLAIN_CHARACTER = /[A-Za-z0-9_\-+=.,/:@%^]/;

/**
 * A word quoted again only where needed, its `active` characters (those written unquoted that the shell
 * reads: glob, brace, tilde) left bare: `'a b'*`. A word without any reads as `quoteArg` gives it.
 */
function renderWord(word: string, active: number[]): string {
  if (active.length === 0) return quoteArg(word);
  let out = '';
  let literal = '';
  for (let i = 0; i < word.length; i++) {
    if (!active.includes(i)) {
      literal += word[i];
      continue;
    }
    if (literal) out += quoteArg(literal);
    literal = '';
    out += word[i];
  }
  return literal ? out + quoteArg(literal) : out;
}

/** Words the shell reads before a command's program (reserved words, and `time` in bash). */
const LEADING_WORDS = new Set(['!', '{', '}', 'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', 'time']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

function programOf(words: string[], rendered: string[]): string {
  let first = 0;
  while (first < words.length - 1 && (LEADING_WORDS.has(words[first]) || ASSIGNMENT.test(words[first]))) first++;
  return rendered.slice(first).join(' ');
}

/** Operators of normal mode, longest first. `(`, `<(` and `>(` open a nested list (see `list`). */
const OPERATORS = ['&>>', '<<<', '<<-', '&&', '||', ';;', ';&', '|&', '&>', '>>', '<<', '<&', '>&', '<>', '>|', '<(', '>(', ';', '&', '|', '<', '>', '(', ')'];
const OPENS_LIST = new Set(['(', '<(', '>(']);
const VARIABLE_START = /[A-Za-z0-9_@*#?$!-]/;

class Tokenizer {
  readonly tokens: Token[] = [];
  complete = true;
  private i = 0;
  private word: { value: string; start: number; active: number[] } | undefined;

  constructor(private readonly text: string) {}

  run(): void {
    this.list(undefined);
  }

  private append(value: string, start: number): void {
    if (this.word) this.word.value += value;
    else this.word = { value, start, active: [] };
  }

  /**
   * Quoted (or escaped) text of a word. A leading `~` is expanded only when nothing up to the first
   * unquoted `/` is quoted: in `~"/x"` or `~\/x` it is a plain character, the folder named `~`.
   */
  private appendQuoted(value: string, start: number): void {
    const word = this.word;
    if (word && word.active[0] === 0 && word.value[0] === '~' && !word.value.includes('/')) word.active.shift();
    this.append(value, start);
  }

  /** An unquoted character of a word; one the shell reads (`*`, `~`, `{`...) is marked so. */
  private appendUnquoted(c: string, start: number): void {
    // After quotes, even empty ones (`''~`), a `~` no longer begins the word: the shell leaves it be.
    const literalTilde = c === '~' && this.word?.value === '';
    this.append(c, start);
    if (literalTilde) return;
    if (!PLAIN_CHARACTER.test(c)) this.word!.active.push(this.word!.value.length - 1);
  }

  private flush(): void {
    if (this.word) this.tokens.push({ word: this.word.value, start: this.word.start, end: this.i, active: this.word.active });
    this.word = undefined;
  }

  private op(op: string): void {
    this.flush();
    this.tokens.push({ op });
  }

  /** Normal mode, up to `close` (`)`, `}` or a backtick) or the end. */
  private list(close: string | undefined): void {
    const s = this.text;
    while (this.i < s.length) {
      const c = s[this.i];
      if (close !== undefined && c === close) {
        this.op(close);
        this.i++;
        return;
      }
      if (c === ' ' || c === '\t') {
        this.flush();
        this.i++;
      } else if (c === '\n' || c === '\r') {
        this.op('\n');
        this.i++;
      } else if (c === '\\') {
        this.backslash();
      } else if (c === "'") {
        this.singleQuoted();
      } else if (c === '"') {
        this.doubleQuoted();
      } else if (c === '`' || c === '$') {
        this.expansion();
      } else if (this.historyExpansionAt(this.i)) {
        this.historyExpansion();
      } else if (c === '#' && !this.word) {
        // A comment: the shell runs none of it, yet an allow rule written without one must not match. Its
        // text is part of the operator, so a rule holding one matches only that one (cmd.exe reads no
        // comment: there `#` and what follows are the program's words).
        const end = s.indexOf('\n', this.i);
        const comment = s.slice(this.i, end === -1 ? s.length : end);
        this.op(comment);
        this.i += comment.length;
      } else {
        const op = OPERATORS.find((o) => s.startsWith(o, this.i));
        if (op === undefined) {
          this.appendUnquoted(c, this.i);
          this.i++;
          continue;
        }
        this.op(op);
        this.i += op.length;
        if (OPENS_LIST.has(op)) this.list(')');
      }
    }
    this.flush();
    if (close !== undefined) this.complete = false;
  }

  private backslash(): void {
    const next = this.text[this.i + 1];
    if (next === '\n') {
      this.i += 2; // line continuation
      return;
    }
    if (next === undefined) {
      this.appendQuoted('\\', this.i);
      this.i++;
      return;
    }
    this.appendQuoted(next, this.i);
    this.i += 2;
  }

  private singleQuoted(): void {
    const start = this.i;
    const end = this.text.indexOf("'", this.i + 1);
    if (end === -1) {
      this.complete = false;
      this.appendQuoted(this.text.slice(this.i + 1), start);
      this.i = this.text.length;
      return;
    }
    this.appendQuoted(this.text.slice(this.i + 1, end), start);
    this.i = end + 1;
  }

  private doubleQuoted(): void {
    const s = this.text;
    const start = this.i;
    this.appendQuoted('', start); // `""` is a word, empty
    this.i++;
    while (this.i < s.length) {
      const c = s[this.i];
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === '\\' && '$`"\\\n'.includes(s[this.i + 1] ?? '')) {
        if (s[this.i + 1] !== '\n') this.appendQuoted(s[this.i + 1], this.i);
        this.i += 2;
      } else if (c === '`' || (c === '$' && /[({]|[A-Za-z0-9_@*#?$!-]/.test(s[this.i + 1] ?? ''))) {
        this.expansion();
        this.appendQuoted('', this.i); // the rest of the quoted text goes on as a word
      } else if (s[this.i + 1] !== '"' && this.historyExpansionAt(this.i)) {
        this.historyExpansion();
        this.appendQuoted('', this.i);
      } else {
        this.appendQuoted(c, this.i);
        this.i++;
      }
    }
    this.complete = false;
  }

  /**
   * A `!` an interactive bash or zsh would expand from its history before parsing the line (the
   * editor runs run_command lines in its terminal): `!!:gs/"// #"` re-runs the previous line with its
   * quotes removed. Not when followed by a blank, `=` or `(` (bash leaves those alone; `!(` is an
   * extglob, an operator anyway), nor at the end.
   */
  private historyExpansionAt(i: number): boolean {
    const next = this.text[i + 1];
    return this.text[i] === '!' && next !== undefined && !' \t\n\r=('.includes(next);
  }

  private historyExpansion(): void {
    this.op('!');
    this.i++;
  }

  /** At a backtick or a `$`: a substitution or expansion, or a lone `$` (a literal). */
  private expansion(): void {
    const s = this.text;
    if (s[this.i] === '`') {
      this.op('`');
      this.i++;
      this.list('`');
      return;
    }
    const next = s[this.i + 1];
    if (next === '(' || next === '{') {
      this.op(`$${next}`);
      this.i += 2;
      this.list(next === '(' ? ')' : '}');
    } else if (next !== undefined && (VARIABLE_START.test(next) || next === "'" || next === '"')) {
      // `$name`, `$1`, `$'...'` (bash's quoting, a variable in dash): the value is not known here. The
      // name is part of the operator: a rule holding `$BUILD_DIR` must not match `$HOME` in its place.
      const name = VARIABLE_START.test(next) ? /^(?:[A-Za-z_][A-Za-z0-9_]*|.)/.exec(s.slice(this.i + 1))![0] : '';
      this.op(`$${name}`);
      this.i += 1 + name.length;
    } else {
      this.append('$', this.i);
      this.i++;
    }
  }
}

/** Cuts a shell line into simple commands and the operators between them. */
export function parseShellLine(text: string): ShellLine {
  const tokenizer = new Tokenizer(text);
  tokenizer.run();
  const commands: SimpleCommand[] = [];
  const shape: string[] = [];
  let run: Extract<Token, { word: string }>[] = [];
  const endRun = () => {
    if (run.length === 0) return;
    const words = run.map((t) => t.word);
    const rendered = run.map((t) => renderWord(t.word, t.active));
    const spaced = run.map((t) => text.slice(t.start, t.end)).join(' ');
    commands.push({ raw: text.slice(run[0].start, run.at(-1)!.end).trim(), spaced, words, normalized: rendered.join(' '), program: programOf(words, rendered) });
    shape.push('W');
    run = [];
  };
  for (const token of tokenizer.tokens) {
    if ('word' in token) {
      run.push(token);
    } else {
      endRun();
      shape.push(token.op);
    }
  }
  endRun();
  return { commands, shape, complete: tokenizer.complete };
}
