import { hasBidiControls, hasHiddenCharacters, mixedScripts, revealHidden } from '../display-text.js';

/**
 * Text that came from an event or an operator (user, engine, table, query, a server message
 * quoting a value), as the UI shows it: as text (never HTML), each character that shows nothing
 * (bidi controls, zero-width and other format characters) as a visible mark (`⟨U+202E⟩`),
 * isolated in a `<bdi>` so it cannot reorder what is around it. `title` (the whole value, for a
 * cell that cuts it short) is revealed the same way. A word mixing Latin, Cyrillic or Greek
 * letters, which no mark can show, is underlined and named in the title.
 */
export function ShownText({ text, class: className, title }: { text: string; class?: string; title?: string }) {
  const scripts = mixedScripts(text);
  const mixedNote = scripts.length === 0 ? undefined : `mixes ${scripts.join(' and ')} letters in one word: some may be look-alikes`;
  const titles = [title === undefined ? undefined : revealHidden(title), mixedNote].filter((t) => t !== undefined);
  return (
    <bdi class={mixedNote === undefined ? className : `${className ?? ''} mixed-scripts`.trim()} title={titles.length === 0 ? undefined : titles.join('\n')}>
      {revealHidden(text)}
    </bdi>
  );
}

/**
 * Under a form field whose value holds characters that show nothing, the value with each as a
 * visible mark. The field itself keeps the value as it is (a search must ask for exactly it),
 * so its box shows it reordered or with nothing to see: `hive.sales.\u202Esredro`, opened from
 * a drill-down link, would read as "hive.sales.orders" there. Nothing when the value has none.
 */
export function HiddenCharactersNote({ value, id }: { value: string; id?: string }) {
  if (!hasHiddenCharacters(value)) return null;
  return (
    <small class="bidi-note" id={id} role="note">
      holds {hasBidiControls(value) ? 'direction controls' : 'invisible characters'}: <ShownText text={value} />
    </small>
  );
}
