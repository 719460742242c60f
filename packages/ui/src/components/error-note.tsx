import { ShownText } from './shown-text.js';

/** A failure message announced to screen readers (a server's message may quote a value: shown as ShownText); nothing when there is none (''). */
export function ErrorNote({ message }: { message: string }) {
  if (message === '') return null;
  return (
    <p class="error" role="alert">
      <ShownText text={message} />
    </p>
  );
}
