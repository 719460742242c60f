/**
 * The admin token lives in this tab's sessionStorage only: never in a URL, a cookie or
 * localStorage, so it leaves with the tab and is never sent anywhere but the Authorization
 * header of this origin's API calls.
 */
const KEY = 'auditlake.adminToken';

export function readToken(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function clearToken(): void {
  sessionStorage.removeItem(KEY);
}
