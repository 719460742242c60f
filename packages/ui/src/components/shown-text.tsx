import { revealBidi } from '../display-text.js';

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
