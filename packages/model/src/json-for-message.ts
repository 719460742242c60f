/** How much of a value an error message quotes. */
const QUOTED_CHARS_MAX = 200;

/**
 * A value as JSON for an error message: at most 200 characters, and never throwing. A request
 * body may hold a value nested too deep for JSON.stringify's recursion (a few MB of `[` parse
 * fine); quoting it in a refusal must not turn the 400 into a 500.
 */
export function jsonForMessage(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return Array.isArray(value) ? 'an array nested too deep to quote' : 'an object nested too deep to quote';
  }
  if (text === undefined) return String(value);
  return text.length > QUOTED_CHARS_MAX ? `${text.slice(0, QUOTED_CHARS_MAX)}…` : text;
}
