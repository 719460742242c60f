/**
 * Characters that show nothing, so a value holding one reads as another: the format characters
 * (Cf: the bidi controls U+202A–U+202E, U+2066–U+2069, LRM, RLM, ALM, which also reorder what
 * follows them, so `hive.sales.\u202Esredro` reads as "hive.sales.orders"; zero-width space and
 * joiners, soft hyphen, tag characters U+E0000–E007F), the line and paragraph separators (Zl,
 * Zp), every other default-ignorable code point (combining grapheme joiner U+034F, variation
 * selectors, Hangul fillers, unassigned ones like U+2065), and the control characters other
 * than tab, line feed and carriage return, which lay text out as white space does.
 */
const HIDDEN = /[\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]|[^\P{Cc}\t\n\r]/gu;

/** The bidi controls among them: they reorder what is around them, not only hide. */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

/** True when `text` holds a character that shows nothing (HIDDEN). */
export function hasHiddenCharacters(text: string): boolean {
  HIDDEN.lastIndex = 0;
  return HIDDEN.test(text);
}

/** True when `text` holds a bidi control. */
export function hasBidiControls(text: string): boolean {
  return BIDI_CONTROLS.test(text);
}

/**
 * `text` for display, each character that shows nothing replaced by a visible mark such as
 * `⟨U+202E⟩` or `⟨U+E0041⟩`, so a value cannot pass for another. For display only: what is
 * sent to the server, exported or copied keeps the value exactly.
 */
export function revealHidden(text: string): string {
  return text.replace(HIDDEN, (c) => `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`);
}

/** Scripts whose letters pass for each other's (Cyrillic а, Greek ο for Latin a, o). */
const LOOKALIKE_SCRIPTS = [
  ['Latin', /\p{Script=Latin}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
] as const;

/**
 * The look-alike scripts mixed within one word of `text` (`['Latin', 'Cyrillic']` for
 * `hive.sаles` with a Cyrillic а), or [] when no word mixes them. A mark cannot show such a
 * letter as something else, but a word mixing scripts is rarely honest and can be flagged.
 */
export function mixedScripts(text: string): string[] {
  const mixed = new Set<string>();
  for (const [word] of text.matchAll(/[\p{L}\p{M}]+/gu)) {
    const scripts = LOOKALIKE_SCRIPTS.filter(([, letters]) => letters.test(word)).map(([name]) => name);
    if (scripts.length > 1) for (const s of scripts) mixed.add(s);
  }
  return LOOKALIKE_SCRIPTS.map(([name]) => name).filter((name) => mixed.has(name));
}
