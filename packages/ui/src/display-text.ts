/**
 * Unicode's bidirectional formatting characters: the embeddings and overrides (U+202A–U+202E),
 * the isolates (U+2066–U+2069) and the marks (LRM U+200E, RLM U+200F, ALM U+061C). Invisible,
 * they reorder what follows them, so `hive.sales.\u202Esredro` reads as "hive.sales.orders".
 */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** True when `text` holds a bidi control. */
export function hasBidiControls(text: string): boolean {
  BIDI_CONTROLS.lastIndex = 0;
  return BIDI_CONTROLS.test(text);
}

/**
 * `text` for display, each bidi control replaced by a visible mark such as `⟨U+202E⟩`, so a
 * value cannot pass for another. For display only: what is sent to the server, exported or
 * copied keeps the value exactly.
 */
export function revealBidi(text: string): string {
  return text.replace(BIDI_CONTROLS, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`);
}
