/**
 * Java-properties parsing (the subset configuration files use): `key=value`, `key: value` and
 * `key value`; `#` and `!` comments; `\` line continuations; `\t \n \r \f \\ \uXXXX` escapes.
 * Later keys override earlier ones.
 */
export function parseProperties(text: string): Map<string, string> {
  const result = new Map<string, string>();
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] ?? '').replace(/^[ \t\f]+/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (endsWithContinuation(line) && i + 1 < lines.length) {
      line = line.slice(0, -1) + (lines[++i] ?? '').replace(/^[ \t\f]+/, '');
    }
    if (endsWithContinuation(line)) line = line.slice(0, -1);
    const { key, value } = splitKeyValue(line);
    result.set(unescape(key), unescape(value));
  }
  return result;
}

function endsWithContinuation(line: string): boolean {
  let backslashes = 0;
  for (let i = line.length - 1; i >= 0 && line[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 1;
}

function splitKeyValue(line: string): { key: string; value: string } {
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '=' || c === ':' || c === ' ' || c === '\t' || c === '\f') break;
    i++;
  }
  const key = line.slice(0, i);
  let rest = line.slice(i).replace(/^[ \t\f]+/, '');
  if (rest.startsWith('=') || rest.startsWith(':')) rest = rest.slice(1).replace(/^[ \t\f]+/, '');
  return { key, value: rest };
}

function unescape(s: string): string {
  return s.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_m, seq: string) => {
    if (seq.startsWith('u') && seq.length === 5) return String.fromCharCode(parseInt(seq.slice(1), 16));
    switch (seq) {
      case 't': return '\t';
      case 'n': return '\n';
      case 'r': return '\r';
      case 'f': return '\f';
      default: return seq;
    }
  });
}
