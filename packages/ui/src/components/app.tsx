import { useMemo, useState } from 'preact/hooks';
import { AdminApi } from '../api.js';
import { PAGES, navigate, readWindowState, usePageLocation, writeWindowState, type PageName } from '../page-location.js';
import { clearToken, readToken, saveToken } from '../token-store.js';
import { MaintenancePage } from './maintenance-page.js';
import { OverviewPage } from './overview-page.js';
import { SearchPage } from './search-page.js';
import { SignIn } from './sign-in.js';

/** The shell: header with the pages and sign-out, the sign-in form until a token is given, then the page of the URL. */
export function App() {
  const location = usePageLocation();
  const [token, setToken] = useState(readToken);
  const [message, setMessage] = useState('');
  const api = useMemo(
    () =>
      token === undefined
        ? undefined
        : new AdminApi(token, (refusal) => {
            clearToken();
            setToken(undefined);
            setMessage(`The token was refused: ${refusal}`);
          }),
    [token],
  );
  const signOut = () => {
    clearToken();
    setToken(undefined);
    setMessage('Signed out.');
  };
  const go = (page: PageName) => (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    // The window (time range, max events) follows the user from page to page.
    navigate(page, writeWindowState(new URLSearchParams(), readWindowState(location.params)));
  };
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <h1>auditlake</h1>
        <nav aria-label="Audit pages">
          {PAGES.map((p) => (
            <a key={p.name} href={p.path} aria-current={location.page === p.name ? 'page' : undefined} onClick={go(p.name)}>
              {p.title}
            </a>
          ))}
        </nav>
        {token !== undefined && (
          <button type="button" class="sign-out" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {api === undefined ? (
          <SignIn
            message={message}
            onToken={(t) => {
              saveToken(t);
              setMessage('');
              setToken(t);
            }}
          />
        ) : location.page === 'search' ? (
          <SearchPage api={api} params={location.params} />
        ) : location.page === 'maintenance' ? (
          <MaintenancePage api={api} params={location.params} />
        ) : (
          <OverviewPage api={api} params={location.params} />
        )}
      </main>
    </>
  );
}
