import { hasBidiControls, revealBidi } from '../display-text.js';

/**
 * Text that came from an event or an operator (user, engine, table, query, a server message
 * quoting a value), as the UI shows it: as text (never HTML), its bidi controls as visible marks
 * (`⟨U+202E⟩`), isolated in a `<bdi>` so it cannot reorder what is around it. `title` (the
 * whole value, for a cell that cuts it short) is revealed the same way.
 */
export function ShownText({ text, class: className, title }: { text: string; class?: string; title?: string }) {
  return (
    <bdi class={className} title={title === undefined ? undefined : revealBidi(title)}>
      {revealBidi(text)}
    </bdi>
  );
}

/**
 * Under a form field whose value holds bidi controls, the value with each control as a visible
 * mark. The field itself keeps the value as it is (a search must ask for exactly it), so its
 * box shows it reordered: `hive.sales.\u202Esredro`, opened from a drill-down link, would read
 * as "hive.sales.orders" there. Nothing when the value has none.
 */
export function BidiNote({ value, id }: { value: string; id?: string }) {
  if (!hasBidiControls(value)) return null;
  return (
    <small class="bidi-note" id={id} role="note">
      holds direction controls: <ShownText text={value} />
    </small>
  );
}
