import { useState } from 'preact/hooks';
import { ErrorNote } from './error-note.js';

/**
 * Asks for the admin token. It is kept in this tab's sessionStorage and sent only in the
 * Authorization header. Should the form ever be submitted natively (scripts failing after the
 * page rendered), it posts (never GET, so nothing lands in a URL) and its field has no `name`,
 * so the browser sends no token at all.
 */
export function SignIn({ message, onToken }: { message: string; onToken: (token: string) => void }) {
  const [token, setToken] = useState('');
  return (
    <form
      class="sign-in"
      method="post"
      onSubmit={(e) => {
        e.preventDefault();
        if (token.trim() !== '') onToken(token.trim());
      }}
    >
      <h2>Sign in</h2>
      <p>
        Paste the admin token (<code>npm start</code> prints it; it is also in <code>data/admin-token</code>). It stays in this browser tab only.
      </p>
      <label>
        Admin token
        <input id="token" type="password" autocomplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
      </label>
      <button type="submit" class="primary">
        Sign in
      </button>
      <ErrorNote message={message} />
    </form>
  );
}
