/** A failure message announced to screen readers; nothing when there is none (''). */
export function ErrorNote({ message }: { message: string }) {
  if (message === '') return null;
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}
