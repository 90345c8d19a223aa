/**
 * Where a JSON text breaks. JSON.parse's own message quotes a slice of the input, which may hold a
 * secret (an api_key next to a missing comma), so the message is rebuilt here from a small scanner
 * that only reports a position and what it expected.
 */
export interface JsonSyntaxProblem {
  line: number;
  column: number;
  reason: string;
}

class SyntaxStop {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {}
}

export function locateJsonError(text: string): JsonSyntaxProblem | null {
  let i = 0;
  const fail = (reason: string): never => {
    throw new SyntaxStop(i, reason);
  };
  const describe = (): string => {
    if (i >= text.length) return 'unexpected end of file';
    const ch = text[i]!;
    return /[\x21-\x7e]/.test(ch) ? `unexpected character '${ch}'` : `unexpected character U+${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  };
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const literal = (word: string) => {
    for (const ch of word) {
      if (text[i] !== ch) fail(`${describe()} (expected ${word})`);
      i++;
    }
  };
  const string = () => {
    i++; // opening quote
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const ch = text[i]!;
      if (ch === '"') {
        i++;
        return;
      }
      if (ch < ' ') fail('control character in string (use \\n, \\t)');
      if (ch === '\\') {
        i++;
        const esc = text[i];
        if (esc === 'u') {
          i++;
          for (let k = 0; k < 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i] ?? '')) fail('invalid \\u escape in string');
            i++;
          }
          continue;
        }
        if (esc === undefined || !'"\\/bfnrt'.includes(esc)) fail('invalid escape in string');
      }
      i++;
    }
  };
  const number = () => {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else if (/[1-9]/.test(text[i] ?? '')) while (/[0-9]/.test(text[i] ?? '')) i++;
    else fail(`${describe()} (expected a number)`);
    if (text[i] === '.') {
      i++;
      if (!/[0-9]/.test(text[i] ?? '')) fail(`${describe()} (expected a digit)`);
      while (/[0-9]/.test(text[i] ?? '')) i++;
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      if (!/[0-9]/.test(text[i] ?? '')) fail(`${describe()} (expected a digit)`);
      while (/[0-9]/.test(text[i] ?? '')) i++;
    }
  };
  const value = (): void => {
    skipSpace();
    const ch = text[i];
    if (ch === '{') {
      i++;
      skipSpace();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        skipSpace();
        if (text[i] !== '"') fail(`${describe()} (expected a double-quoted property name)`);
        string();
        skipSpace();
        if (text[i] !== ':') fail(`${describe()} (expected ':')`);
        i++;
        value();
        skipSpace();
        if (text[i] === ',') {
          i++;
          skipSpace();
          if (text[i] === '}') fail("trailing comma before '}'");
          continue;
        }
        if (text[i] === '}') {
          i++;
          return;
        }
        fail(`${describe()} (expected ',' or '}')`);
      }
    }
    if (ch === '[') {
      i++;
      skipSpace();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        skipSpace();
        if (text[i] === ',') {
          i++;
          skipSpace();
          if (text[i] === ']') fail("trailing comma before ']'");
          continue;
        }
        if (text[i] === ']') {
          i++;
          return;
        }
        fail(`${describe()} (expected ',' or ']')`);
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) return number();
    fail(text.trim() === '' ? 'the file is empty' : `${describe()} (expected a value)`);
  };

  try {
    value();
    skipSpace();
    if (i < text.length) fail(`${describe()} after the end of the JSON value`);
    return null;
  } catch (error) {
    if (!(error instanceof SyntaxStop)) throw error;
    return { ...lineColumnOf(text, error.offset), reason: error.reason };
  }
}

function lineColumnOf(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let k = 0; k < offset && k < text.length; k++) {
    if (text[k] === '\n') {
      line++;
      lineStart = k + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}
